import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { IngressConfig } from '../config/config';
import { isLoopbackHost } from '../config/listeners';
import { assertOperatorBind, buildOperatorListener } from '../console/listener';
import type { OperatorAuthSettings } from '../console/operator-auth';
import { Gate } from '../gate/gate';
import type { SupervisorLink } from '../supervisor/link';
import type { TriggerRegistry } from '../gate/trigger-registry';
import { IngressMetrics } from '../trigger/webhook/metrics';
import { resolveSecrets } from '../trigger/webhook/secrets';
import { buildWebhookListener, type IngressSettings, type WebhookListener, type WebhookListenerOptions } from '../trigger/webhook/server';
import type { WebhookSource } from '../trigger/webhook/source';

/*
 * The ingress of a deployment: the webhook listener (src/trigger/webhook/) and the operator's
 * listener (src/console/) side by side, each built by its own part; the webhook trigger's readouts
 * (`/metrics`, `/status`) are served by the operator's. The two listeners know nothing of each other.
 */

export interface IngressOptions extends WebhookListenerOptions {
  /** Serve the supervisor's status page (`/supervisor`) for the fleet on this task queue. */
  supervisorPage?: { taskQueue: string };
  /** The operator listener's sign-in (no operators: open, for loopback only). */
  operatorAuth?: OperatorAuthSettings;
}

/** Both listeners, built and not listening: the webhook listener (`app`) and the operator's (`operator`). */
export function buildIngress(opts: IngressOptions): WebhookListener & { operator: FastifyInstance } {
  const webhook = buildWebhookListener(opts);
  const operator = buildOperatorListener({
    client: opts.client,
    agents: opts.registry.agents,
    transport: opts.settings,
    ...(opts.supervisorPage ? { supervisorPage: opts.supervisorPage } : {}),
    ...(opts.operatorAuth ? { auth: opts.operatorAuth } : {}),
    logger: opts.logger,
    metricsRegistry: webhook.metrics.registry,
    routes: webhook.readouts,
  });
  return { ...webhook, operator };
}

export interface StartIngressOptions {
  client: Client;
  taskQueue: string;
  registry: TriggerRegistry;
  config: Pick<IngressConfig, 'host' | 'port' | 'operatorHost' | 'operatorPort' | 'operatorAuth' | 'secrets'> & IngressSettings;
  sources: readonly WebhookSource<unknown>[];
  /**
   * Fall back to each source's documented dev secret when its variable is unset (`npm start` and
   * `wakegate dev` only). Honoured on a loopback listener only: on any other address an unset secret
   * is a start-up error, as without it, since the dev secrets are published.
   */
  allowDevSecrets?: boolean;
  logger?: Logger;
  metrics?: IngressMetrics;
  /** Its gate's `startBacklog` (the deployment's WAKEGATE_START_BACKLOG); default the gate's. */
  startBacklog?: number;
  /** Its gate's line to the supervisor (the deployment's `supervisorLink`, with its policy); default one with the default policy. */
  supervisor?: SupervisorLink;
}

/** A listening ingress: where its two listeners are, its metrics, which sources use a dev secret, and how to stop it. */
export interface RunningIngress {
  /** The public listener: webhooks and the health check only. Its real bind address (`http://0.0.0.0:8787` when bound to all). */
  url: string;
  /** The operator's listener: the supervisor page and its actions, metrics, status. Its real bind address. */
  operatorUrl: string;
  metrics: IngressMetrics;
  devSecretSources: string[];
  close(): Promise<void>;
}

/** Build the ingress's two listeners, the webhook one on its own gate, and listen (port 0 = a free port). */
export async function startIngress(opts: StartIngressOptions): Promise<RunningIngress> {
  const sources = opts.sources;
  const devRefused =
    opts.allowDevSecrets && !isLoopbackHost(opts.config.host)
      ? `dev secrets are published, so they are used on a loopback listener only, and WAKEGATE_INGRESS_HOST is ${opts.config.host}`
      : undefined;
  const { secrets, fromDev } = resolveSecrets(sources, opts.config.secrets, (opts.allowDevSecrets ?? false) && !devRefused, devRefused);
  // A coalescing agent's decision is waited for within the ingress's own deadline: past it the event
  // is already durably recorded, and the sender gets 202 `accepted` rather than a 503 that would
  // make it retry something stored.
  const gate = new Gate({
    client: opts.client,
    taskQueue: opts.taskQueue,
    registry: opts.registry,
    decisionWaitMs: Math.max(100, Math.floor(opts.config.temporalTimeoutMs / 2)),
    ...(opts.startBacklog !== undefined ? { startBacklog: opts.startBacklog } : {}),
    ...(opts.supervisor ? { supervisor: opts.supervisor } : {}),
  });
  assertOperatorBind(opts.config.operatorHost, Object.keys(opts.config.operatorAuth.operators).length > 0);
  const { app, operator, metrics } = buildIngress({
    gate,
    client: opts.client,
    registry: opts.registry,
    sources,
    secrets,
    settings: opts.config,
    metrics: opts.metrics ?? new IngressMetrics({ defaultMetrics: true }),
    logger: opts.logger,
    supervisorPage: { taskQueue: opts.taskQueue },
    operatorAuth: opts.config.operatorAuth,
  });
  await app.listen({ host: opts.config.host, port: opts.config.port });
  let operatorAddress: string;
  try {
    await operator.listen({ host: opts.config.operatorHost, port: opts.config.operatorPort });
    operatorAddress = boundUrl(operator.server.address());
  } catch (err) {
    await app.close();
    throw err;
  }
  return {
    url: boundUrl(app.server.address()),
    operatorUrl: operatorAddress,
    metrics,
    devSecretSources: fromDev,
    close: async () => {
      // Closing waits for the requests being answered; a sender's kept-alive socket that falls idle
      // after that is closed as soon as it does, not at the end of its keep-alive timeout (65 s).
      const idle = setInterval(() => {
        app.server.closeIdleConnections();
        operator.server.closeIdleConnections();
      }, 100);
      try {
        await app.close();
        await operator.close();
      } finally {
        clearInterval(idle);
      }
      await gate.close();
    },
  };
}

/**
 * Where a listener is bound, as a URL: Fastify's own answer names 127.0.0.1 for a listener on
 * 0.0.0.0, which would hide that it takes connections from everywhere.
 */
function boundUrl(address: string | AddressInfo | null): string {
  if (address === null || typeof address === 'string') return String(address);
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}
