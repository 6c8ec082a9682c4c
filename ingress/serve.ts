import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { IngressConfig } from '../config/config';
import { Gate } from '../gate/gate';
import type { TriggerRegistry } from '../triggers/registry';
import { IngressMetrics } from './metrics';
import { resolveSecrets } from './secrets';
import { buildIngress, type IngressSettings } from './server';
import type { WebhookSource } from './source';

export interface StartIngressOptions {
  client: Client;
  taskQueue: string;
  registry: TriggerRegistry;
  config: Pick<IngressConfig, 'host' | 'port' | 'secrets'> & IngressSettings;
  sources: readonly WebhookSource<unknown>[];
  /** Fall back to each source's documented dev secret when its variable is unset (`npm start` only). */
  allowDevSecrets?: boolean;
  logger?: Logger;
  metrics?: IngressMetrics;
}

/** A listening ingress: where it is, its metrics, which sources use a dev secret, and how to stop it. */
export interface RunningIngress {
  url: string;
  metrics: IngressMetrics;
  devSecretSources: string[];
  close(): Promise<void>;
}

/** Build the webhook ingress on its own gate and listen (port 0 = a free port). */
export async function startIngress(opts: StartIngressOptions): Promise<RunningIngress> {
  const sources = opts.sources;
  const { secrets, fromDev } = resolveSecrets(sources, opts.config.secrets, opts.allowDevSecrets ?? false);
  // A coalescing agent's decision is waited for within the ingress's own deadline: past it the event
  // is already durably recorded, and the sender gets 202 `accepted` rather than a 503 that would
  // make it retry something stored.
  const gate = new Gate({ client: opts.client, taskQueue: opts.taskQueue, registry: opts.registry, decisionWaitMs: Math.max(100, Math.floor(opts.config.temporalTimeoutMs / 2)) });
  const { app, metrics } = buildIngress({
    gate,
    client: opts.client,
    registry: opts.registry,
    sources,
    secrets,
    settings: opts.config,
    metrics: opts.metrics ?? new IngressMetrics({ defaultMetrics: true }),
    logger: opts.logger,
    supervisorPage: { taskQueue: opts.taskQueue },
  });
  const address = await app.listen({ host: opts.config.host, port: opts.config.port });
  return {
    url: address,
    metrics,
    devSecretSources: fromDev,
    close: async () => {
      await app.close();
      await gate.close();
    },
  };
}
