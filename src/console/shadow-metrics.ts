import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { AgentRegistry } from '../agents/registry';
import { liveShadowCounts, type LiveShadowCounts } from '../shadow/report';

/** How the live shadows' counts behind `/metrics` are kept: read every `refreshMs`, each read given up after `deadlineMs`, stale after `staleAfterMs`. */
export interface ShadowFiguresTiming {
  refreshMs: number;
  deadlineMs: number;
  staleAfterMs: number;
}

/** Read every 15 s, each read given at most 5 s, stale once a minute has passed without a good read. */
export const SHADOW_FIGURES_TIMING: ShadowFiguresTiming = { refreshMs: 15_000, deadlineMs: 5_000, staleAfterMs: 60_000 };

const OUTCOMES = ['running', 'ran', 'refused', 'failed'] as const;
const DAY_MS = 24 * 3_600_000;

/** The last figures read for one agent, and when. */
interface Figures {
  counts: LiveShadowCounts;
  atMs: number;
}

/**
 * The live shadows' counts on the operator's /metrics, read from Temporal's visibility in the
 * background, never by a scrape: a read starts when the listener is ready and every `refreshMs`
 * after (one at a time), and is given up after `deadlineMs`; the listener's close stops them. A
 * scrape answers at once from the last figures:
 * - `wakegate_shadow_runs{agent, outcome}`: each shadowed agent's live shadows open now (`running`)
 *   or closed in the last 24 h (`ran`, `refused` by the shadow caps or the supervisor, `failed`),
 *   apart from every production figure; absent until a first read succeeded;
 * - `wakegate_shadow_runs_age_seconds{agent}`: how old those figures are;
 * - `wakegate_shadow_runs_stale{agent}`: 1 when there are none or they are older than
 *   `staleAfterMs` (visibility did not answer in time since), else 0.
 * Nothing is registered when no agent has a `shadow` option.
 */
export function registerShadowMetrics(
  app: FastifyInstance,
  registry: Registry,
  client: Client,
  agents: AgentRegistry,
  timing: ShadowFiguresTiming = SHADOW_FIGURES_TIMING,
): void {
  const shadowed = Object.values(agents)
    .filter((a) => a.shadow)
    .map((a) => a.policy.name);
  if (!shadowed.length || registry.getSingleMetric('wakegate_shadow_runs')) return;
  const figures = new Map<string, Figures>();
  const labels = { labelNames: ['agent'] as const, registers: [registry] };
  new Gauge({
    name: 'wakegate_shadow_runs',
    help: 'Live shadow runs of each agent with a shadow option: open now (running), or closed in the last 24 h (ran; refused by the shadow caps or a halted supervisor; failed); read in the background, see wakegate_shadow_runs_stale',
    labelNames: ['agent', 'outcome'],
    registers: [registry],
    collect() {
      for (const [agent, f] of figures) for (const outcome of OUTCOMES) this.set({ agent, outcome }, f.counts[outcome]);
    },
  });
  new Gauge({
    name: 'wakegate_shadow_runs_age_seconds',
    help: 'How old the figures of wakegate_shadow_runs are, s',
    ...labels,
    collect() {
      for (const [agent, f] of figures) this.set({ agent }, (Date.now() - f.atMs) / 1000);
    },
  });
  new Gauge({
    name: 'wakegate_shadow_runs_stale',
    help: `1 when wakegate_shadow_runs has no figures for the agent, or none read in the last ${timing.staleAfterMs / 1000} s (Temporal visibility did not answer in time)`,
    ...labels,
    collect() {
      for (const agent of shadowed) {
        const f = figures.get(agent);
        this.set({ agent }, !f || Date.now() - f.atMs > timing.staleAfterMs ? 1 : 0);
      }
    },
  });

  // Aborted when the listener closes: a read under way ends then, its answer unused.
  const closing = new AbortController();
  const readOne = async (agent: string): Promise<void> => {
    const giveUp = new AbortController();
    const timer = setTimeout(() => giveUp.abort(new Error(`no answer within ${timing.deadlineMs} ms`)), timing.deadlineMs);
    const stop = () => giveUp.abort(new Error('the listener closed'));
    closing.signal.addEventListener('abort', stop, { once: true });
    // The abort ends the gRPC calls; this ends the wait even if something under them does not.
    const givenUp = new Promise<never>((_, reject) => giveUp.signal.addEventListener('abort', () => reject(giveUp.signal.reason as Error), { once: true }));
    try {
      const since = new Date(Date.now() - DAY_MS);
      const read = client.withAbortSignal(giveUp.signal, () =>
        client.withDeadline(Date.now() + timing.deadlineMs, () => liveShadowCounts(client, agent, since)),
      );
      read.catch(() => undefined);
      figures.set(agent, { counts: await Promise.race([read, givenUp]), atMs: Date.now() });
    } catch {
      // The last figures stay, ageing: the stale flag says so.
    } finally {
      clearTimeout(timer);
      closing.signal.removeEventListener('abort', stop);
    }
  };
  let reading: Promise<unknown> | undefined;
  const refresh = () => {
    reading ??= Promise.all(shadowed.map(readOne)).finally(() => (reading = undefined));
  };
  let interval: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    refresh();
    interval = setInterval(refresh, timing.refreshMs);
    interval.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(interval);
    closing.abort();
  });
}
