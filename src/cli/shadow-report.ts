import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { liveShadowReport } from '../shadow/report';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';
import { checked, shadowTable, type ShadowOptions } from './shadow';

/**
 * `wakegate shadow report <agent> [--since 7d] [--limit N] [--fail-if COND]... [--json]`: the live
 * shadows of the agent (its `shadow` option) that closed in the window, each diffed against the run
 * it shadows (src/shadow/report.ts), the sums, and those the shadow caps refused. Exit 3 when none
 * closed in the window, 6 when a `--fail-if` holds, 1 when a shadow failed.
 */
export async function shadowReport(agent: string, opts: ShadowOptions): Promise<number> {
  if (opts.candidate) throw new UsageError('shadow report reads the live shadows the agent’s own `shadow` option runs: it takes no --candidate');
  if (opts.wakeKey || opts.reason || opts.tools !== 'live') throw new UsageError('shadow report takes --since, --limit, --fail-if and --json only');
  const { sinceMs, limit, failIf } = checked(opts);
  const deployment = app();
  const def = deployment.agents[agent];
  if (!def) throw new UsageError(`no agent "${agent}" in this deployment (it defines ${Object.keys(deployment.agents).join(', ')})`);
  const client = await connectClient(loadConfig());
  try {
    const since = new Date(Date.now() - sinceMs);
    const report = await liveShadowReport(client, { agent, since, limit });
    const asJson = opts.json === true || !process.stdout.isTTY;
    const head = { agent, since: since.toISOString(), sample: def.shadow?.sample ?? 0 };
    if (!report.wakes.length && !report.refused.length && !report.failed.length) {
      const message = `no live shadow of ${agent} closed since ${since.toISOString()}${def.shadow ? '' : ` (${agent} has no shadow option now)`}`;
      if (asJson) printJson({ ...head, error: { code: 'not_found', message } });
      process.stderr.write(`wakegate: ${message}\n`);
      return ExitCode.refused;
    }
    const crossed = failIf.filter((f) => f.crossed(report.summary));
    if (asJson) printJson({ ...head, ...report, failIf: failIf.map((f) => ({ condition: f.text, crossed: crossed.includes(f) })) });
    else
      process.stdout.write(
        shadowTable(
          `live shadows of ${agent} (sample ${head.sample})`,
          report,
          crossed,
          report.refused.length ? [`  refused by the shadow caps or the supervisor: ${report.refused.length}`] : [],
        ),
      );
    if (crossed.length) {
      process.stderr.write(`wakegate: ${crossed.map((c) => c.text).join(', ')} crossed\n`);
      return ExitCode.thresholdCrossed;
    }
    return report.failed.length ? ExitCode.error : ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
