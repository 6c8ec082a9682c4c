import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { AgentRegistry } from '../agents/registry';
import { liveShadowCounts } from '../shadow/report';
import { FIGURES_TIMING, keepReading, type FiguresTiming } from './background-figures';

/** How the live shadows' counts behind `/metrics` are kept (src/console/background-figures.ts). */
export type ShadowFiguresTiming = FiguresTiming;
export const SHADOW_FIGURES_TIMING: ShadowFiguresTiming = FIGURES_TIMING;

const OUTCOMES = ['running', 'ran', 'refused', 'failed'] as const;
const DAY_MS = 24 * 3_600_000;

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
  const figures = keepReading(app, client, shadowed, (agent) => liveShadowCounts(client, agent, new Date(Date.now() - DAY_MS)), timing);
  const labels = { labelNames: ['agent'] as const, registers: [registry] };
  new Gauge({
    name: 'wakegate_shadow_runs',
    help: 'Live shadow runs of each agent with a shadow option: open now (running), or closed in the last 24 h (ran; refused by the shadow caps or a halted supervisor; failed); read in the background, see wakegate_shadow_runs_stale',
    labelNames: ['agent', 'outcome'],
    registers: [registry],
    collect() {
      for (const [agent, f] of figures) for (const outcome of OUTCOMES) this.set({ agent, outcome }, f.value[outcome]);
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
}
