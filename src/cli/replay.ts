import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { Duration } from '../core/parse';
import { TERMINAL_REASONS, type TerminalReason } from '../core/run-types';
import { replayCandidates, replayRuns } from '../shadow/replay';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';

/** The options of `wakegate replay`, as commander parses them. */
export interface ReplayOptions {
  since: string;
  reason?: string;
  wakeKey?: string;
  epoch?: string;
  limit: string;
  dryRun?: boolean;
}

const EPOCH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function checked(opts: ReplayOptions): { sinceMs: number; limit: number; reason?: TerminalReason; epoch: string } {
  const since = Duration('--since', 60_000).safeParse(opts.since);
  if (!since.success) throw new UsageError(since.error.issues[0]?.message ?? `--since "${opts.since}" is not a duration`);
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
  if (opts.reason && !(TERMINAL_REASONS as readonly string[]).includes(opts.reason))
    throw new UsageError(`--reason must be one of ${TERMINAL_REASONS.join(', ')}`);
  if (opts.epoch !== undefined && !EPOCH.test(opts.epoch))
    throw new UsageError('--epoch is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  // A fresh epoch names this replay; give it again (--epoch) and what it already replayed is not sent twice.
  const epoch = opts.epoch ?? new Date().toISOString().slice(0, 19).replace(/[-:]/g, '');
  return { sinceMs: since.data, limit, epoch, ...(opts.reason ? { reason: opts.reason as TerminalReason } : {}) };
}

/**
 * `wakegate replay <agent> [--since 7d] [--reason R] [--wake-key K] [--epoch E] [--limit N] [--dry-run]`:
 * send the events of the agent's matching recorded runs through the gate again, under a replay epoch
 * (src/shadow/replay.ts). Prints one JSON object: the epoch, each run with what the gate answered for
 * each of its events (with `--dry-run`, the keys they would take; nothing is sent), and the runs not
 * replayed with why. Exit 2 for a bad flag or an unknown agent, 3 when no run matches, 1 when the gate
 * refused an event today's definitions no longer accept.
 */
export async function replay(agent: string, opts: ReplayOptions): Promise<number> {
  const { sinceMs, limit, reason, epoch } = checked(opts);
  const wakegate = app();
  if (!wakegate.agents[agent]) throw new UsageError(`no agent "${agent}" in this deployment (it defines ${Object.keys(wakegate.agents).join(', ')})`);
  const config = loadConfig();
  const client = await connectClient(config);
  try {
    const since = new Date(Date.now() - sinceMs);
    const query = { agent, since, limit, ...(reason ? { reason } : {}), ...(opts.wakeKey ? { wakeKey: opts.wakeKey } : {}) };
    const { runs, notReplayed } = await replayCandidates(client, query, epoch);
    const head = { agent, epoch, since: since.toISOString(), ...(reason ? { reason } : {}), ...(opts.wakeKey ? { wakeKey: opts.wakeKey } : {}) };
    if (!runs.length) {
      const message = `no closed run of ${agent} since ${since.toISOString()}${reason ? ` ending ${reason}` : ''}${opts.wakeKey ? ` about ${opts.wakeKey}` : ''} to replay`;
      printJson({ ...head, notReplayed, error: { code: 'not_found', message } });
      process.stderr.write(`wakegate: ${message}\n`);
      return ExitCode.refused;
    }
    if (opts.dryRun) {
      printJson({
        ...head,
        dryRun: true,
        runs: runs.map((r) => ({
          workflowId: r.workflowId,
          terminalReason: r.terminalReason,
          events: r.events.map(({ eventKey, replayKey }) => ({ eventKey, replayKey })),
        })),
        notReplayed,
      });
      return ExitCode.ok;
    }
    const gate = wakegate.gate(client, config.taskQueue);
    const answers = await replayRuns(client, gate, agent, runs, epoch).finally(() => gate.close().catch(() => undefined));
    const replayed = runs.map((r) => ({ workflowId: r.workflowId, terminalReason: r.terminalReason, events: answers[r.workflowId] ?? [] }));
    printJson({ ...head, runs: replayed, notReplayed });
    const invalid = replayed.flatMap((r) => r.events.filter((e) => e.decision === 'invalid'));
    for (const e of invalid) process.stderr.write(`wakegate: ${e.eventKey} was not replayed: ${e.message}\n`);
    return invalid.length ? ExitCode.error : ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
