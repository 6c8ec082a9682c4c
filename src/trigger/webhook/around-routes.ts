import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { refuse, type Reply } from './answers';
import type { IngressMetrics } from './metrics';

/* What the webhook listener answers around its routes: Fastify's own errors, an unknown route, a drain. */

export type Send = (request: FastifyRequest, reply: FastifyReply, source: string, started: number, r: Reply) => FastifyReply;

/** Errors Fastify raises before the handler (over the body limit, not JSON, unreadable body), and an unknown route: the same JSON shape as every refusal. */
export function answerOutsideRoutes(
  app: FastifyInstance,
  ctx: { settings: { bodyLimitBytes: number }; logger?: Pick<Logger, 'error'>; metrics: IngressMetrics; serves: (source: string) => boolean },
  send: Send,
): void {
  const { settings, metrics } = ctx;
  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, request, reply) => {
    const source = (request.params as { source?: string })?.source ?? '(none)';
    const label = ctx.serves(source) ? source : '(unknown)';
    let r: Reply;
    if (err.statusCode === 413) r = refuse(413, 'too_large', `the body is over the ${settings.bodyLimitBytes}-byte limit`);
    else if (err.statusCode === 415) r = refuse(415, 'unsupported_media_type', 'send the body as application/json');
    else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) r = refuse(400, 'bad_request', err.message);
    else {
      ctx.logger?.error({ source: label, err: err.message }, 'webhook failed');
      r = refuse(500, 'internal', 'the ingress failed on this request; nothing was accepted');
    }
    metrics.refused.inc({ source: label, reason: r.reason });
    return send(request, reply, label, (request as { startedAt?: number }).startedAt ?? performance.now(), r);
  });
  app.setNotFoundHandler((request, reply) => {
    metrics.refused.inc({ source: '(unknown)', reason: 'not_found' });
    return send(request, reply, '(unknown)', performance.now(), refuse(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`));
  });
}

/**
 * A drain (SIGTERM closes the listener, then the gate): a delivery that reaches it on a connection
 * already open is still taken and answered as ever, and its answer closes the connection, so the
 * sender's next delivery opens a new one, which the closed listener refuses before anything is
 * taken. No delivery is cut off half taken, and no 503 goes out without its Retry-After.
 */
export function closeConnectionsOnDrain(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) void reply.header('connection', 'close');
    return payload;
  });
}
