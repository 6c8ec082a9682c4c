import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Wakegate } from '../runtime/wakegate';
import type { IngressMetrics } from '../trigger/webhook/metrics';
import { startIngress, type RunningIngress } from './ingress-listeners';
import { boot } from './boot';
import { announce, settledBy, untilStopped, type RunningPart } from './running';

export interface IngressPartOptions {
  app: Wakegate;
  config: Config;
  client: Client;
  logger: Logger;
  /** Each webhook source's dev secret when its variable is unset, on a loopback listener only (`npm start`, `wakegate dev`). */
  allowDevSecrets?: boolean;
  metrics?: IngressMetrics;
}

/**
 * The webhook ingress with the operator's listener, in front of a gate with the deployment's
 * supervisor link: `config.ingress`'s hosts and ports (port 0: a free one). Stopping it closes both
 * listeners: no new connection is taken, the deliveries being read are answered (each 2xx only once
 * Temporal has its event), then the gate's wake counts are flushed.
 */
export async function startIngressPart(opts: IngressPartOptions): Promise<RunningPart & RunningIngress> {
  const { app, config, client } = opts;
  const ingress = await startIngress({
    client,
    taskQueue: config.taskQueue,
    registry: app.registry,
    sources: app.webhookSources,
    config: config.ingress,
    startBacklog: config.startBacklog,
    allowDevSecrets: opts.allowDevSecrets ?? false,
    logger: opts.logger,
    supervisor: app.supervisorLink(client, config.taskQueue),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
  });
  const closed = settledBy();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= ingress.close().finally(closed.resolve));
  return { ...ingress, name: 'ingress', done: closed.promise, close, stop: close };
}

/** Where the standalone ingress listens: each unset one from its WAKEGATE_INGRESS_* / WAKEGATE_OPERATOR_* setting. */
export interface IngressCommandOptions {
  host?: string;
  port?: number;
  operatorHost?: string;
  operatorPort?: number;
}

/**
 * `wakegate ingress` (and `workers/ingress.ts`): the webhook listener and the operator's listener,
 * against the configured Temporal; every webhook source needs its secret (no dev secrets). Prints one
 * JSON line with the addresses really bound; on SIGTERM or SIGINT it drains and resolves 0.
 */
export async function runIngress(opts: IngressCommandOptions = {}): Promise<number> {
  const ctx = boot('wakegate-ingress', (c) => ({
    ...c,
    ingress: {
      ...c.ingress,
      host: opts.host ?? c.ingress.host,
      port: opts.port ?? c.ingress.port,
      operatorHost: opts.operatorHost ?? c.ingress.operatorHost,
      operatorPort: opts.operatorPort ?? c.ingress.operatorPort,
    },
  }));
  const client = await ctx.app.client();
  try {
    const ingress = await startIngressPart({ app: ctx.app, config: ctx.config, client, logger: ctx.logger });
    announce({
      process: 'ingress',
      temporal: ctx.config.temporal.connectionOptions.address,
      taskQueue: ctx.config.taskQueue,
      webhooks: ctx.app.webhookSources.map((s) => `${ingress.url}/webhooks/${s.name}`),
      health: `${ingress.url}/healthz`,
      operator: ingress.operatorUrl,
      pid: process.pid,
    });
    ctx.logger.info({ url: ingress.url, operator: ingress.operatorUrl }, 'ingress listening');
    return await untilStopped([ingress], ctx.logger);
  } finally {
    await client.connection.close();
    await ctx.tracing?.shutdown();
  }
}
