import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { agentVersions, type AgentRegistry } from '../agents/registry';
import { rolloutId } from '../core/ids';
import type { RolloutView } from '../core/rollout';
import { FIGURES_TIMING, keepReading, type FiguresTiming } from './background-figures';

const DAY_MS = 24 * 3_600_000;
const quote = (s: string) => `"${s.replace(/["\\]/g, '')}"`;

/** One agent's rollout as `/metrics` shows it: its view (none: no rollout), and its runs closed in the last 24 h by version. */
interface RolloutFigures {
  view?: RolloutView;
  runs: { version: string; success: number; other: number }[];
}

/** The agent's rollout view from its workflow's memo (describe: no worker needed), and two visibility counts per version. */
async function readFigures(client: Client, agent: string, versions: string[], taskQueue: string | undefined): Promise<RolloutFigures> {
  const since = new Date(Date.now() - DAY_MS).toISOString();
  const closed = `WorkflowType = "runWorkflow" AND WakeAgent = ${quote(agent)} AND CloseTime >= ${quote(since)}`;
  const count = async (q: string) => (await client.workflow.count(q)).count;
  const view = taskQueue
    ? await client.workflow
        .getHandle(rolloutId(taskQueue, agent))
        .describe()
        .then((d) => d.memo?.rollout as RolloutView | undefined)
        .catch((err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        })
    : undefined;
  const runs = await Promise.all(
    versions.map(async (version) => {
      const of = `${closed} AND WakeVersion = ${quote(version)}`;
      const [all, success] = await Promise.all([count(of), count(`${of} AND WakeTerminalReason = "success"`)]);
      return { version, success, other: all - success };
    }),
  );
  return { ...(view ? { view } : {}), runs };
}

/**
 * Each versioned agent's rollout on the operator's /metrics, read in the background like the live
 * shadows' counts (src/console/background-figures.ts), so a scrape never waits on Temporal:
 * - `wakegate_rollout_share{agent, current, candidate}`: the share of wake keys new wakes give the
 *   candidate now (0 idle or rolled back, 1 promoted); absent with no rollout, or no task queue given;
 * - `wakegate_rollout_runs{agent, version, outcome}`: the agent's runs closed in the last 24 h, by the
 *   version they were pinned to (`WakeVersion`) and whether they ended `success` or `other`;
 * - `wakegate_rollout_stale{agent}`: 1 when those figures are missing or older than `staleAfterMs`.
 * Nothing is registered when no agent lists other versions.
 */
export function registerRolloutMetrics(
  app: FastifyInstance,
  registry: Registry,
  client: Client,
  agents: AgentRegistry,
  taskQueue: string | undefined,
  timing: FiguresTiming = FIGURES_TIMING,
): void {
  const versioned = Object.entries(agents).flatMap(([name, def]) => {
    const { current, others } = agentVersions(def);
    return others.length ? [{ name, versions: [current, ...others] }] : [];
  });
  if (!versioned.length || registry.getSingleMetric('wakegate_rollout_runs')) return;
  const versionsOf = new Map(versioned.map((a) => [a.name, a.versions]));
  const figures = keepReading(
    app,
    client,
    versioned.map((a) => a.name),
    (agent) => readFigures(client, agent, versionsOf.get(agent)!, taskQueue),
    timing,
  );
  new Gauge({
    name: 'wakegate_rollout_share',
    help: "The share of the agent's wake keys that new wakes run its candidate version on now (0 idle or rolled back, 1 promoted)",
    labelNames: ['agent', 'current', 'candidate'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [agent, { value }] of figures) {
        const v = value.view;
        if (!v) continue;
        const share = v.phase === 'promoted' ? 1 : v.phase === 'ramping' ? v.share : 0;
        this.set({ agent, current: v.current, candidate: v.candidate ?? '' }, share);
      }
    },
  });
  new Gauge({
    name: 'wakegate_rollout_runs',
    help: "The agent's runs closed in the last 24 h, by the version they were pinned to and whether they ended success; read in the background, see wakegate_rollout_stale",
    labelNames: ['agent', 'version', 'outcome'],
    registers: [registry],
    collect() {
      for (const [agent, { value }] of figures)
        for (const r of value.runs) {
          this.set({ agent, version: r.version, outcome: 'success' }, r.success);
          this.set({ agent, version: r.version, outcome: 'other' }, r.other);
        }
    },
  });
  new Gauge({
    name: 'wakegate_rollout_stale',
    help: `1 when wakegate_rollout_runs has no figures for the agent, or none read in the last ${timing.staleAfterMs / 1000} s`,
    labelNames: ['agent'],
    registers: [registry],
    collect() {
      for (const { name } of versioned) {
        const f = figures.get(name);
        this.set({ agent: name }, !f || Date.now() - f.atMs > timing.staleAfterMs ? 1 : 0);
      }
    },
  });
}
