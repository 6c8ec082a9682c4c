import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { IngressConfig } from '../../config/config';
import { Gate } from '../../gate/gate';
import type { TriggerRegistry } from '../registry';
import { IngressMetrics } from './metrics';
import { resolveSecrets } from './secrets';
import { buildIngress, type IngressSettings } from './server';
import type { WebhookSource } from './source';

export interface StartIngressOptions {
  client: Client;
  taskQueue: string;
  registry: TriggerRegistry;
  config: Pick<IngressConfig, 'host' | 'port' | 'operatorHost' | 'operatorPort' | 'operatorAuth' | 'secrets'> & IngressSettings;
  sources: readonly WebhookSource<unknown>[];
  /** Fall back to each source's documented dev secret when its variable is unset (`npm start` only). */
  allowDevSecrets?: boolean;
  logger?: Logger;
  metrics?: IngressMetrics;
  /** Its gate's `startBacklog` (the deployment's WAKEGATE_START_BACKLOG); default the gate's. */
  startBacklog?: number;
}

/** A listening ingress: where its two listeners are, its metrics, which sources use a dev secret, and how to stop it. */
export interface RunningIngress {
  /** The public listener: webhooks and the health check only. */
  url: string;
  /** The operator's listener: the supervisor page and its actions, metrics, status. */
  operatorUrl: string;
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
  const gate = new Gate({
    client: opts.client,
    taskQueue: opts.taskQueue,
    registry: opts.registry,
    decisionWaitMs: Math.max(100, Math.floor(opts.config.temporalTimeoutMs / 2)),
    ...(opts.startBacklog !== undefined ? { startBacklog: opts.startBacklog } : {}),
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
  const address = await app.listen({ host: opts.config.host, port: opts.config.port });
  let operatorAddress: string;
  try {
    operatorAddress = await operator.listen({ host: opts.config.operatorHost, port: opts.config.operatorPort });
  } catch (err) {
    await app.close();
    throw err;
  }
  return {
    url: address,
    operatorUrl: operatorAddress,
    metrics,
    devSecretSources: fromDev,
    close: async () => {
      await app.close();
      await operator.close();
      await gate.close();
    },
  };
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

/**
 * The operator's listener carries the kill switch, the breaker's reset and the release of held
 * wakes: without operators to sign in it binds to a loopback address only, and anything else is a
 * start-up error that says how to configure them.
 */
export function assertOperatorBind(host: string, signIn: boolean): void {
  if (!signIn && !LOOPBACK.test(host)) {
    throw new Error(
      `WAKEGATE_OPERATOR_HOST=${host}: the operator's listener (supervisor page and actions, metrics, status) has no sign-in configured, ` +
        'so it binds to loopback only: set WAKEGATE_OPERATORS=name:secret,... (secrets of 16+ characters) to serve it elsewhere, ' +
        'or keep the default 127.0.0.1 and reach it through an SSH tunnel',
    );
  }
}
