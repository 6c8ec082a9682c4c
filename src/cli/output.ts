import { GateInputError } from '../gate/errors';
import { Duration } from '../core/parse';
import { TERMINAL_REASONS, type TerminalReason } from '../core/run-types';
import { ConfigError, TemporalUnreachableError } from '../config/errors';

/** Exit codes every `wakegate` command shares (scripts rely on them). */
export const ExitCode = {
  ok: 0,
  error: 1,
  badInput: 2,
  refused: 3,
  unreachable: 4,
  timedOut: 5,
  /** `wakegate shadow --fail-if`: the diff crossed a condition the caller gates on. */
  thresholdCrossed: 6,
  /** `emit --wait`: the run ended `failed`, a defect (fix its cause, then `wakegate replay`). */
  runFailed: 7,
  /** `emit --wait`: the run ended without doing its work, by a rule or a person (see `exitForRun`). */
  runStopped: 8,
} as const;

/** Where a command writes: this process's stdout and stderr, or a resident process's reply to the caller (src/cli/resident.ts). */
export interface Out {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** This process's own stdout and stderr. */
export const stdio: Out = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

/**
 * The exit code of `emit --wait` for the run's terminal reason: 0 for a run that did its work or had
 * none to do (`success`, `no_op`; a schedule's `duplicate`, `skipped`), 7 for `failed`, 8 for a run
 * a rule or a person stopped short (`escalated`, `blocked`, `budget_exhausted`, `cancelled`,
 * `discarded`). No reason (the event's run was already settled with no result to wait for) is 0.
 */
export function exitForRun(reason: TerminalReason | undefined): number {
  switch (reason) {
    case undefined:
    case 'success':
    case 'no_op':
    case 'duplicate':
    case 'skipped':
      return ExitCode.ok;
    case 'failed':
      return ExitCode.runFailed;
    case 'escalated':
    case 'blocked':
    case 'budget_exhausted':
    case 'cancelled':
    case 'discarded':
      return ExitCode.runStopped;
  }
}

/** Print exactly one JSON object on stdout. */
export function printJson(value: unknown, out: Out = stdio): void {
  out.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** Thrown for a bad command-line value; the message names the flag. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Report a failure as one JSON object on stdout plus a line on stderr, and pick the exit code. */
export function reportError(err: unknown, out: Out = stdio): number {
  const e = err instanceof Error ? err : new Error(String(err));
  let code: string = 'error';
  let exit: number = ExitCode.error;
  let issues: unknown;
  if (e instanceof GateInputError) {
    code = e.code;
    exit = ExitCode.badInput;
    issues = e.issues;
  } else if (e instanceof UsageError || e instanceof ConfigError) {
    code = 'usage';
    exit = ExitCode.badInput;
  } else if (e instanceof TemporalUnreachableError) {
    code = 'temporal_unreachable';
    exit = ExitCode.unreachable;
  }
  printJson({ error: { code, message: e.message, ...(issues ? { issues } : {}) } }, out);
  out.stderr(`wakegate: ${e.message}\n`);
  return exit;
}

/** The recorded-runs window that `wakegate shadow` and `wakegate replay` take: `--since`, `--limit` (1 to 1000), `--reason`. */
export function recordedWindow(opts: { since: string; limit: string; reason?: string }): { sinceMs: number; limit: number; reason?: TerminalReason } {
  const since = Duration('--since', 60_000).safeParse(opts.since);
  if (!since.success) throw new UsageError(since.error.issues[0]?.message ?? `--since "${opts.since}" is not a duration`);
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
  if (opts.reason && !(TERMINAL_REASONS as readonly string[]).includes(opts.reason))
    throw new UsageError(`--reason must be one of ${TERMINAL_REASONS.join(', ')}`);
  return { sinceMs: since.data, limit, ...(opts.reason ? { reason: opts.reason as TerminalReason } : {}) };
}
