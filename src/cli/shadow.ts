import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import type { TerminalReason } from '../core/run-types';
import { loadApp } from '../runtime/load-app';
import { parseFailIf, type FailIf, type RunDiff } from '../shadow/diff';
import { recordedRuns, shadowSession, type ShadowReport } from '../shadow/session';
import { ExitCode, printJson, recordedWindow, UsageError } from './output';
import { table } from './trail-table';

/** The options of `wakegate shadow`, as commander parses them. */
export interface ShadowOptions {
  candidate?: string;
  since: string;
  wakeKey?: string;
  reason?: string;
  limit: string;
  tools: string;
  failIf?: string[];
  json?: boolean;
}

export function checked(opts: Omit<ShadowOptions, 'candidate'>): {
  sinceMs: number;
  limit: number;
  reason?: TerminalReason;
  tools: 'live' | 'recorded';
  failIf: FailIf[];
} {
  const window = recordedWindow(opts);
  if (opts.tools !== 'live' && opts.tools !== 'recorded') throw new UsageError('--tools must be live or recorded');
  const failIf = (opts.failIf ?? []).map((text) => {
    try {
      return parseFailIf(text);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  });
  return { ...window, tools: opts.tools, failIf };
}

const short = (v: unknown) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s === undefined ? '-' : s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

function effectLines(d: RunDiff): string[] {
  return d.effects.flatMap((e) =>
    e.change === 'args'
      ? e.args.map((a) => `      ${e.effect}@${e.step} ${a.path}: ${short(a.before)} → ${short(a.after)}`)
      : [`      ${e.change === 'added' ? '+' : '-'} ${e.effect}@${e.step} ${short(e.args)}`],
  );
}

/** The diff for a person: the sums, then each changed wake with its effect changes. */
export function shadowTable(title: string, report: Pick<ShadowReport, 'summary' | 'wakes' | 'failed'>, crossed: FailIf[], more: string[] = []): string {
  const s = report.summary;
  const changed = report.wakes.filter((d) => d.effects.length || d.terminalReason.changed || d.answer.changed);
  const lines = [
    `${title}: ${s.wakes} wake(s); effects changed in ${s.changedEffects}, terminal reason in ${s.changedReason}, answer in ${s.changedAnswer}; new escalations ${s.newEscalations}`,
    `  tokens ${s.tokens.before} → ${s.tokens.after} (${s.tokens.delta >= 0 ? '+' : ''}${s.tokens.delta}); cost $${s.costUsd.before} → $${s.costUsd.after}; turns ${s.turns.before} → ${s.turns.after}${s.toolCalls ? `; tool calls answered from the record ${s.toolCalls.recorded}, made live ${s.toolCalls.live}` : ''}`,
  ];
  if (changed.length) {
    lines.push(
      '',
      ...table([
        ['wake', 'reason', 'effects', 'tokens'],
        ...changed.map((d) => [
          d.runKey,
          `${d.terminalReason.before} → ${d.terminalReason.after}`,
          String(d.effects.length),
          `${d.tokens.before} → ${d.tokens.after}`,
        ]),
      ]),
    );
    for (const d of changed.filter((x) => x.effects.length)) lines.push(`    ${d.runKey}`, ...effectLines(d));
  }
  lines.push(...more);
  for (const f of report.failed) lines.push(`  failed: ${f.runKey} (${f.shadowRunKey}): ${f.error}`);
  for (const c of crossed) lines.push(`  --fail-if ${c.text}: crossed`);
  return `${lines.join('\n')}\n`;
}

/**
 * `wakegate shadow <agent> --candidate <module> [--since 7d] [--wake-key K] [--reason R] [--limit N]
 * [--tools live|recorded] [--fail-if EXPR]... [--json]`: run the candidate deployment's definition of the agent on the events
 * of each recorded run in the window, effects recorded and never carried out (src/shadow/), and print
 * the diff. JSON when `--json` is given or stdout is not a terminal. Exit 2 for a bad flag or a
 * candidate without the agent, 3 when no recorded run is in the window, 6 when a `--fail-if` holds,
 * 1 when a shadow run failed.
 */
export async function shadow(agent: string, opts: ShadowOptions): Promise<number> {
  const { sinceMs, limit, reason, tools, failIf } = checked(opts);
  if (!opts.candidate) throw new UsageError('--candidate <module> is required: the deployment holding the new version of the agent');
  const candidate = loadApp(path.resolve(opts.candidate));
  if (!candidate.agents[agent])
    throw new UsageError(`the candidate ${opts.candidate} defines no agent "${agent}" (it defines ${Object.keys(candidate.agents).join(', ')})`);
  const config = loadConfig();
  const client = await connectClient(config);
  const connection = await NativeConnection.connect(config.temporal.connectionOptions);
  try {
    const since = new Date(Date.now() - sinceMs);
    const { runs, notShadowed } = await recordedRuns(client, {
      agent,
      since,
      limit,
      tools,
      ...(opts.wakeKey ? { wakeKey: opts.wakeKey } : {}),
      ...(reason ? { reason } : {}),
    });
    const asJson = opts.json === true || !process.stdout.isTTY;
    if (!runs.length) {
      const message = `no completed run of ${agent} closed since ${since.toISOString()}${opts.wakeKey ? ` about ${opts.wakeKey}` : ''}${reason ? ` ending ${reason}` : ''}`;
      if (asJson) printJson({ agent, since: since.toISOString(), notShadowed, error: { code: 'not_found', message } });
      process.stderr.write(`wakegate: ${message}\n`);
      return ExitCode.refused;
    }
    const report = await shadowSession({ client, connection, namespace: config.temporal.namespace, candidate, runs });
    const crossed = failIf.filter((f) => f.crossed(report.summary));
    if (asJson)
      printJson({
        agent,
        candidate: opts.candidate,
        since: since.toISOString(),
        ...report,
        notShadowed,
        failIf: failIf.map((f) => ({ condition: f.text, crossed: crossed.includes(f) })),
      });
    else process.stdout.write(shadowTable(`shadow session ${report.session}`, report, crossed));
    if (crossed.length) {
      process.stderr.write(`wakegate: ${crossed.map((c) => c.text).join(', ')} crossed\n`);
      return ExitCode.thresholdCrossed;
    }
    return report.failed.length ? ExitCode.error : ExitCode.ok;
  } finally {
    await connection.close();
    await client.connection.close();
  }
}
