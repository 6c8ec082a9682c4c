import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import type { TerminalReason } from '../core/run-types';
import { replayCandidates, replayRuns } from '../shadow/replay';
import { app } from './app';
import { ExitCode, printJson, recordedWindow, UsageError } from './output';

/** The options of `wakegate replay`, as commander parses them. */
export interface ReplayOptions {
  since: string;
  reason?: string;
  wakeKey?: string;
  epoch?: string;
  includeCancelled?: boolean;
  limit: string;
  dryRun?: boolean;
}

const EPOCH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function checked(opts: ReplayOptions): { sinceMs: number; limit: number; reason?: TerminalReason; epoch?: string } {
  const window = recordedWindow(opts);
  if (opts.epoch !== undefined && !EPOCH.test(opts.epoch))
    throw new UsageError('--epoch is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  if (window.reason === 'cancelled' && !opts.includeCancelled)
    throw new UsageError('--reason cancelled replays runs a person stopped: add --include-cancelled to say so');
  // No epoch named: each run follows its latest execution once (`after:<run ID>`), whatever the day.
  return { ...window, ...(opts.epoch ? { epoch: opts.epoch } : {}) };
}

/**
 * `wakegate replay <agent> [--since 7d] [--reason R] [--wake-key K] [--include-cancelled] [--epoch E] [--limit N] [--dry-run]`:
 * run the agent's matching recorded runs again, each as an execution again of the same workflow ID
 * started by the gate (src/shadow/replay.ts, src/gate/replay.ts), oldest first. Prints one JSON
 * object: the epoch when named, what became of each run (`started`, `already_replayed`,
 * `in_progress`, `refused`, `invalid`; with `--dry-run`, what would be sent: nothing is), and the runs
 * not replayed with why.
 * Exit 2 for a bad flag or an unknown agent, 3 when no run matches, 1 when a run's events are refused
 * by today's definitions or by the supervisor.
 */
export async function replay(agent: string, opts: ReplayOptions): Promise<number> {
  const { sinceMs, limit, reason, epoch } = checked(opts);
  const wakegate = app();
  if (!wakegate.agents[agent]) throw new UsageError(`no agent "${agent}" in this deployment (it defines ${Object.keys(wakegate.agents).join(', ')})`);
  const config = loadConfig();
  const client = await connectClient(config);
  try {
    const since = new Date(Date.now() - sinceMs);
    const query = {
      agent,
      since,
      limit,
      ...(reason ? { reason } : {}),
      ...(opts.wakeKey ? { wakeKey: opts.wakeKey } : {}),
      ...(opts.includeCancelled ? { includeCancelled: true } : {}),
      ...(epoch ? { epoch } : {}),
    };
    const { runs, notReplayed } = await replayCandidates(client, query);
    const head = {
      agent,
      ...(epoch ? { epoch } : {}),
      since: since.toISOString(),
      ...(reason ? { reason } : {}),
      ...(opts.wakeKey ? { wakeKey: opts.wakeKey } : {}),
    };
    // Nothing left to do: every run was replayed already, or is running now (another process's replay, say).
    const done = (why: string) => why.startsWith('already replayed') || why.startsWith('running now');
    if (!runs.length && notReplayed.length && notReplayed.every((n) => done(n.why))) {
      printJson({ ...head, runs: [], notReplayed });
      return ExitCode.ok;
    }
    if (!runs.length) {
      const message = `no closed run of ${agent} since ${since.toISOString()} ending ${reason ?? 'failed'}${opts.wakeKey ? ` about ${opts.wakeKey}` : ''} to replay`;
      printJson({ ...head, notReplayed, error: { code: 'not_found', message } });
      process.stderr.write(`wakegate: ${message}\n`);
      return ExitCode.refused;
    }
    if (opts.dryRun) {
      printJson({
        ...head,
        dryRun: true,
        runs: runs.map((r) => ({
          of: r.workflowId,
          after: r.runId,
          epoch: epoch ?? `after:${r.runId}`,
          terminalReason: r.terminalReason,
          events: r.events.length,
          effects: r.effects,
        })),
        notReplayed,
      });
      return ExitCode.ok;
    }
    const gate = wakegate.gate(client, config.taskQueue);
    const replayed = await replayRuns(gate, agent, runs, epoch).finally(() => gate.close().catch(() => undefined));
    printJson({ ...head, runs: replayed, notReplayed });
    const invalid = replayed.filter((r) => r.decision === 'invalid' || r.decision === 'refused');
    for (const r of invalid) process.stderr.write(`wakegate: ${r.of} was not replayed: ${'message' in r ? r.message : r.decision}\n`);
    return invalid.length ? ExitCode.error : ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
