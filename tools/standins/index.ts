import type { FastifyInstance } from 'fastify';
import { channelService } from './channel';
import { dashboardService } from './dashboards';
import { exportService } from './exports';
import { pullRequestService } from './pulls';
import { pagerService } from './pager';

export interface StandinPorts {
  channel?: number;
  exports?: number;
  pulls?: number;
  dashboards?: number;
  pager?: number;
}

/** The local stand-ins for the outside world, listening; `urls` are what the adapters are configured with. */
export interface Standins {
  channel: ReturnType<typeof channelService>;
  exports: ReturnType<typeof exportService>;
  pulls: ReturnType<typeof pullRequestService>;
  dashboards: ReturnType<typeof dashboardService>;
  pager: ReturnType<typeof pagerService>;
  urls: { channel: string; exports: string; pulls: string; dashboards: string; pager: string };
  close(): Promise<void>;
}

/**
 * The wakegate settings (the variables of src/config/config.ts) that point the adapters at stand-ins
 * listening on `urls`: `loadConfig(standinSettings(urls)).outside` is the embedded default's outside
 * world on those ports, through the same validation as any deployment's settings.
 */
export function standinSettings(urls: Standins['urls']): Record<string, string> {
  return {
    WAKEGATE_CHANNEL_URL: urls.channel,
    WAKEGATE_EXPORT_URL: urls.exports,
    WAKEGATE_PR_URL: urls.pulls,
    WAKEGATE_DASHBOARD_URL: urls.dashboards,
    WAKEGATE_PAGER_URL: `${urls.pager}/v2/enqueue`,
  };
}

async function listen(app: FastifyInstance, port = 0): Promise<string> {
  return app.listen({ host: '127.0.0.1', port });
}

/**
 * Start the four stand-ins (port 0 = a free port). Tests add their fault injection to the returned
 * apps before calling this, with fastify hooks; the services themselves have none.
 */
export async function startStandins(ports: StandinPorts = {}, services: Partial<Omit<Standins, 'urls' | 'close'>> = {}): Promise<Standins> {
  const channel = services.channel ?? channelService();
  const exports = services.exports ?? exportService();
  const pulls = services.pulls ?? pullRequestService();
  const dashboards = services.dashboards ?? dashboardService();
  const pager = services.pager ?? pagerService();
  const urls = {
    channel: await listen(channel.app, ports.channel),
    exports: await listen(exports.app, ports.exports),
    pulls: await listen(pulls.app, ports.pulls),
    dashboards: await listen(dashboards.app, ports.dashboards),
    pager: await listen(pager.app, ports.pager),
  };
  return {
    channel,
    exports,
    pulls,
    dashboards,
    pager,
    urls,
    async close() {
      await Promise.all([channel.app.close(), exports.app.close(), pulls.app.close(), dashboards.app.close(), pager.app.close()]);
    },
  };
}
