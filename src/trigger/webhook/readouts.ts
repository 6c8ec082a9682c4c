import type { FastifyInstance } from 'fastify';
import type { IngressConfig } from '../../config/config';
import type { IngressMetrics } from './metrics';
import { SHED_POLICY, type InFlightCap } from './rate-limit';
import type { WebhookSource } from './source';

/**
 * What the webhook listener tells an operator: `/metrics` (its Prometheus registry, with whatever
 * else was registered on it) and `/status` (its shed policy, in-flight cap, rates and sources). They
 * are served on the operator's listener, which the console builds: the deployment hands it these
 * routes (src/processes/ingress-listeners.ts), so the public listener never answers them.
 */
export function webhookReadouts(
  metrics: IngressMetrics,
  inFlight: InFlightCap,
  settings: Pick<IngressConfig, 'ratePerSecond' | 'burst'>,
  sources: readonly WebhookSource<unknown>[],
): (scope: FastifyInstance) => void {
  return (scope) => {
    scope.get('/metrics', async (_request, reply) => {
      metrics.inFlight.set(inFlight.inFlight);
      return reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics());
    });
    scope.get('/status', async () => ({
      shedPolicy: SHED_POLICY,
      inFlight: inFlight.inFlight,
      maxInFlight: inFlight.limit,
      ratePerSecond: settings.ratePerSecond,
      burst: settings.burst,
      sources: sources.map((s) => ({ name: s.name, trigger: s.trigger, scheme: typeof s.scheme === 'object' ? s.scheme.name : s.scheme })),
    }));
  };
}
