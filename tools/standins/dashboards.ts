import Fastify, { type FastifyInstance } from 'fastify';

/** Deterministic metrics for a (campaign, dashboard): the same names always read the same numbers. */
export function dashboardMetrics(campaign: string, dashboard: string) {
  let h = 2166136261;
  for (const c of `${campaign}/${dashboard}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return { impressions: 1000 + (h % 9000), clicks: 10 + (h % 400), spendUsd: Math.round((h % 50000) / 10) / 100 };
}

/**
 * Stand-in for the campaign dashboards the reporter reads. A dashboard whose name starts with
 * `quiet` reports `changed: false`, so a run over only quiet dashboards has nothing to report.
 */
export function dashboardService(): { app: FastifyInstance; reads: () => number } {
  const app = Fastify();
  let reads = 0;
  app.get<{ Params: { campaign: string; name: string } }>('/campaigns/:campaign/dashboards/:name', async (req) => {
    reads += 1;
    const { campaign, name } = req.params;
    return { campaign, dashboard: name, changed: !name.startsWith('quiet'), metrics: dashboardMetrics(campaign, name) };
  });
  return { app, reads: () => reads };
}
