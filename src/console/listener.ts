import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AgentRegistry } from '../agents/registry';
import { isLoopbackHost, transportOptions, type TransportSettings } from '../config/listeners';
import { registerOperatorAuth, type OperatorAuthSettings } from './operator-auth';
import { registerOperatorGuard } from './operator-guard';
import { registerShadowMetrics } from './shadow-metrics';
import { registerRolloutMetrics } from './rollout-metrics';
import { registerRolloutPage } from './rollout-page';
import { registerShadowPage } from './shadow-page';
import { registerSupervisorPage } from './supervisor-page';
import { registerWakePage } from './wake-page';

/** Largest body the operator's listener reads (its forms and actions are a few fields), bytes. */
const OPERATOR_BODY_LIMIT_BYTES = 16 * 1024;

export interface OperatorListenerOptions {
  client: Client;
  /** The deployment's agents: the trail's and the live shadows' pages, and the shadows' figures on `/metrics`. */
  agents: AgentRegistry;
  /** The listener's timeouts on a client (the webhook listener's). */
  transport: TransportSettings;
  /** Serve the supervisor's status page (`/supervisor`) and the rollouts' (`/rollouts`) for the fleet on this task queue. */
  supervisorPage?: { taskQueue: string };
  /** The sign-in (no operators: open, for loopback only). */
  auth?: OperatorAuthSettings;
  logger?: Logger | undefined;
  /** The registry `/metrics` shows: the live shadows' figures are added to it. */
  metricsRegistry: Registry;
  /** Routes of the parts the console shows beside its pages (the webhook ingress's `/metrics` and `/status`), in the guarded scope. */
  routes?: (scope: FastifyInstance) => void;
}

/**
 * The operator's listener: the `/supervisor` page and its actions, the `/rollouts` pages, the `/wakes/<agent>/<wakeKey>`
 * trail, the live shadows' page, and the routes the deployment adds (`/metrics`, `/status`), all
 * behind the Host allow-list and the sign-in, on an address of its own. Built by the console; the
 * deployment (src/processes/ingress-listeners.ts) puts it beside the webhook listener.
 */
export function buildOperatorListener(opts: OperatorListenerOptions): FastifyInstance {
  // The operator's paths never share the public listener: a request for one there is a 404 like any unknown path.
  const auth = opts.auth ?? { operators: {}, sessionTtlS: 8 * 3600 };
  // A trusted proxy's X-Forwarded-For names the client (the sign-in throttle counts per client); no one else's is read.
  const trustProxy = auth.trustProxy?.length ? { trustProxy: [...auth.trustProxy] } : {};
  const operator = Fastify({ logger: false, ...transportOptions(opts.transport), bodyLimit: OPERATOR_BODY_LIMIT_BYTES, ...trustProxy });
  registerShadowMetrics(operator, opts.metricsRegistry, opts.client, opts.agents);
  registerRolloutMetrics(operator, opts.metricsRegistry, opts.client, opts.agents, opts.supervisorPage?.taskQueue);
  // Every operator path is in one scope behind the Host allow-list and the sign-in: nothing there answers a request that acts as no one.
  void operator.register(async (scope) => {
    await registerOperatorGuard(scope, { hostnames: new Set(auth.hostnames ?? []), tls: auth.tls ?? false, logger: opts.logger });
    await registerOperatorAuth(scope, auth, opts.logger);
    if (opts.supervisorPage) {
      registerSupervisorPage(scope, { client: opts.client, taskQueue: opts.supervisorPage.taskQueue });
      registerRolloutPage(scope, { client: opts.client, taskQueue: opts.supervisorPage.taskQueue, agents: opts.agents });
    }
    registerWakePage(scope, { client: opts.client, agents: opts.agents });
    registerShadowPage(scope, { client: opts.client, agents: opts.agents });
    opts.routes?.(scope);
  });
  return operator;
}

/**
 * The operator's listener carries the kill switch, the breaker's reset and the release of held
 * wakes: without operators to sign in it binds to a loopback address only, and anything else is a
 * start-up error that says how to configure them.
 */
export function assertOperatorBind(host: string, signIn: boolean): void {
  if (!signIn && !isLoopbackHost(host)) {
    throw new Error(
      `WAKEGATE_OPERATOR_HOST=${host}: the operator's listener (supervisor page and actions, metrics, status) has no sign-in configured, ` +
        'so it binds to loopback only: set WAKEGATE_OPERATORS=name:secret,... (secrets of 16+ characters) to serve it elsewhere, ' +
        'or keep the default 127.0.0.1 and reach it through an SSH tunnel',
    );
  }
}
