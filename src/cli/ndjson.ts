import type { GateAnswer } from '../core/decision';
import { isRefusal } from '../core/decision';
import { GateInputError, type GateInputErrorCode } from '../gate/errors';
import { EVENT_LIMITS } from '../gate/limits';
import { ExitCode } from './output';

/*
 * The pure parts of `wakegate emit --file`: a line of the file to an event, an event's outcome to its
 * answer line, and the outcomes of a whole file to one exit status and a summary.
 */

/** One line of the file as the gate takes it: the event, and the agent it names (`agent`, not part of the event). */
export interface FileEvent {
  line: number;
  event: Record<string, unknown>;
  agent?: string;
}

/** A line that is not an event: not JSON, not an object, too long, or an `agent` that is not a name. */
export interface BadLine {
  line: number;
  error: GateInputError;
}

/** Parse line `line` (1-based) of an events file; undefined for a blank line (not an event, no answer). */
export function parseEventLine(text: string, line: number): FileEvent | BadLine | undefined {
  if (text.trim() === '') return undefined;
  const bad = (code: GateInputErrorCode, message: string) => ({
    line,
    error: new GateInputError(code, `line ${line}: ${message}`, [{ path: '(line)', message }]),
  });
  if (Buffer.byteLength(text, 'utf8') > EVENT_LIMITS.maxPayloadTextBytes)
    return bad('payload_too_large', `over ${EVENT_LIMITS.maxPayloadTextBytes} bytes of text: send a reference (a URL, an id) instead of the data`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return bad('invalid_event', `not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return bad('invalid_event', 'must be a JSON object, one event per line');
  const { agent, ...event } = value as Record<string, unknown>;
  if (agent !== undefined && typeof agent !== 'string') return bad('invalid_event', '"agent" must be the name of an agent');
  return { line, event, ...(agent !== undefined ? { agent } : {}) };
}

/** How one event of the file ended: admitted (any decision but a refusal), refused, bad input, Temporal unreachable, or failed otherwise. */
export type LineOutcome = 'admitted' | 'refused' | 'bad' | 'unreachable' | 'failed';

/** One answer line: the gate's answer, or the error, under the event's line number. */
export type AnswerLine = ({ line: number } & GateAnswer) | { line: number; error: { code: string; message: string; issues?: unknown } };

/** The answer line of an event admitted by the gate (its answer), and its outcome. */
export function answered(line: number, answer: GateAnswer): { text: string; outcome: LineOutcome } {
  return { text: JSON.stringify({ line, ...answer }), outcome: isRefusal(answer.decision) ? 'refused' : 'admitted' };
}

/**
 * Whether `e` is the gate's bad-input error. By its name and code, not `instanceof`: the deployment's
 * gate comes from the package it imports (lib/src), a module apart from this bundle's copy.
 */
function isGateInputError(e: Error): e is GateInputError {
  return e.name === 'GateInputError' && typeof (e as Partial<GateInputError>).code === 'string';
}

/** The answer line of an event that failed: bad input (a {@link GateInputError}), Temporal unreachable, or any other error. */
export function failed(line: number, err: unknown, isUnreachable: (err: unknown) => boolean): { text: string; outcome: LineOutcome } {
  const e = err instanceof Error ? err : new Error(String(err));
  const input = isGateInputError(e);
  const [code, outcome]: [string, LineOutcome] = input ? [e.code, 'bad'] : isUnreachable(e) ? ['temporal_unreachable', 'unreachable'] : ['error', 'failed'];
  const issues = input ? e.issues : undefined;
  return { text: JSON.stringify({ line, error: { code, message: e.message, ...(issues ? { issues } : {}) } }), outcome };
}

/**
 * The exit status of a file: 0 when every event was admitted; otherwise the most serious outcome
 * among its lines: 1 some failed (try those again), 4 Temporal unreachable for some, 2 some lines
 * are bad input (fix them), 3 some were refused (mismatch or over a cap). Which lines: their answer
 * lines, and the summary on stderr.
 */
export function fileExitCode(counts: Record<LineOutcome, number>): number {
  if (counts.failed) return ExitCode.error;
  if (counts.unreachable) return ExitCode.unreachable;
  if (counts.bad) return ExitCode.badInput;
  if (counts.refused) return ExitCode.refused;
  return ExitCode.ok;
}

/** Tallies the outcomes of a file's lines, keeping the first line numbers of each kind for the summary. */
export class FileTally {
  readonly counts: Record<LineOutcome, number> = { admitted: 0, refused: 0, bad: 0, unreachable: 0, failed: 0 };
  private readonly lines: Record<LineOutcome, number[]> = { admitted: [], refused: [], bad: [], unreachable: [], failed: [] };

  add(line: number, outcome: LineOutcome): void {
    this.counts[outcome]++;
    if (this.lines[outcome].length < 10) this.lines[outcome].push(line);
  }

  get exitCode(): number {
    return fileExitCode(this.counts);
  }

  /** One line for stderr: how many of each, and the first lines of each kind that was not admitted. */
  summary(): string {
    const total = Object.values(this.counts).reduce((a, b) => a + b, 0);
    const parts = (['admitted', 'refused', 'bad', 'unreachable', 'failed'] as const)
      .filter((k) => this.counts[k] > 0)
      .map((k) => {
        if (k === 'admitted') return `${this.counts[k]} admitted`;
        const more = this.counts[k] > this.lines[k].length ? ', …' : '';
        return `${this.counts[k]} ${k} (line${this.counts[k] > 1 ? 's' : ''} ${this.lines[k].join(', ')}${more})`;
      });
    return `wakegate: ${total} event${total === 1 ? '' : 's'}: ${parts.join(', ') || 'none'}; exit ${this.exitCode}`;
  }
}
