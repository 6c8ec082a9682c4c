import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { IngressConfig } from '../../config/config';
import type { Gate } from '../../gate/gate';
import { GateInputError } from '../../gate/errors';
import type { TriggerRegistry } from '../../gate/trigger-registry';
import { InFlightCap, retryAfterSeconds, SHED_POLICY, TokenBucket, type ShedReason } from './rate-limit';
import { answerBody, jsonDepth, refuse, Reply, statusOf } from './answers';
import { errorBody } from '../../core/error-body';
import { IngressMetrics } from './metrics';
import { webhookReadouts } from './readouts';
import { answerOutsideRoutes, closeConnectionsOnDrain } from './around-routes';
import { createVerifier, type Verifier } from './signatures';
import { transportOptions, type TransportSettings } from '../../config/listeners';
import type { DeliveryContext, WebhookSource } from './source';
import { WakeAttr } from '../../core/trace-context';
import { inSpan } from '../../tracing/spans';

/** Deepest JSON nesting a webhook body may have (400 `too_deep` beyond). */
export const MAX_JSON_DEPTH = 32;

/** The settings the webhook ingress reads (a slice of {@link IngressConfig}). */
export type IngressSettings = Pick<
  IngressConfig,
  'bodyLimitBytes' | 'ratePerSecond' | 'burst' | 'maxInFlight' | 'replayWindowS' | 'temporalTimeoutMs' | 'unavailableRetryAfterS'
> &
  TransportSettings;

export interface WebhookListenerOptions {
  gate: Gate;
  /** The client the gate uses: its deadline bounds how long a delivery waits for Temporal. */
  client: Client;
  /** The gate's triggers: every source must feed one of them (checked at build time). */
  registry: TriggerRegistry;
  sources: readonly WebhookSource<unknown>[];
  /** Each source's secret, by source name. A source without one fails the build, loudly. */
  secrets: Record<string, string>;
  settings: IngressSettings;
  metrics?: IngressMetrics;
  /** Structured log of each answer (source, status, code, delivery id, event key); never headers or secrets. */
  logger?: Logger;
}

/** A built webhook listener (not listening yet), and what it tells an operator: routes for the operator's listener to serve. */
export interface WebhookListener {
  app: FastifyInstance;
  metrics: IngressMetrics;
  inFlight: InFlightCap;
  /** `/metrics` and `/status` (readouts.ts), for the operator's listener: the public one never serves them. */
  readouts: (scope: FastifyInstance) => void;
}

interface Served {
  source: WebhookSource<unknown>;
  verifier: Verifier;
  bucket: TokenBucket;
}

/**
 * The webhook listener, the public one: it serves `POST /webhooks/<source>` and `GET /healthz` and
 * nothing else (every sender on the internet reaches it). Its `/metrics` and `/status` are served by
 * the operator's listener, on its own address (src/console/listener.ts; the deployment puts the two
 * side by side, src/processes/ingress-listeners.ts). A delivery is answered 202 only after the gate
 * returned, that is after Temporal durably accepted the event (a started run, or the open or
 * finished run that already holds its key). Statuses: 401 signature, 400 body, 404
 * source, 413 size, 415 content type, 409/422 refusal, 429 shed (Retry-After), 503 Temporal did not
 * accept in time (Retry-After). Nothing is buffered: over a limit, the request is shed at once.
 */
export function buildWebhookListener(opts: WebhookListenerOptions): WebhookListener {
  const { settings } = opts;
  const metrics = opts.metrics ?? new IngressMetrics();
  const served = servedSources(opts);
  const inFlight = new InFlightCap(settings.maxInFlight);
  metrics.inFlightLimit.set(settings.maxInFlight);

  const app = Fastify({
    logger: false,
    bodyLimit: settings.bodyLimitBytes,
    // A drain answers what reaches it on an open connection (closeConnectionsOnDrain), not a bare 503.
    return503OnClosing: false,
    ...transportOptions(settings),
    // Errors of the router itself (a path segment too long for any source name, a bad URL) get the
    // same JSON shape as every other refusal.
    frameworkErrors: (err, request, reply) => {
      const r =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? refuse(404, 'unknown_source', 'no webhook source by that name') : refuse(400, 'bad_request', err.message);
      metrics.refused.inc({ source: '(unknown)', reason: r.reason });
      void (reply as unknown as FastifyReply).code(r.status).send(r.body);
    },
  });
  // Only JSON is taken, and it is kept as bytes: the signature is over the raw body, parsed after.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const send = (request: FastifyRequest, reply: FastifyReply, source: string, started: number, r: Reply, extra: Record<string, unknown> = {}) => {
    metrics.requestSeconds.observe({ source, status: String(r.status) }, (performance.now() - started) / 1000);
    opts.logger?.info({ source, status: r.status, reason: r.reason, ...extra }, 'webhook answered');
    void reply.code(r.status).headers(r.headers).send(r.body);
    return reply;
  };

  answerOutsideRoutes(app, { settings, logger: opts.logger, metrics, serves: (name) => served.has(name) }, send);
  closeConnectionsOnDrain(app);

  // A load balancer's health check: answers without touching Temporal or saying anything about the fleet.
  app.get('/healthz', async () => ({ ok: true }));

  app.post<{ Params: { source: string } }>('/webhooks/:source', {
    // Before the body is read: an unknown source is a 404 at once.
    onRequest: async (request, reply) => {
      const startedAt = performance.now();
      (request as { startedAt?: number }).startedAt = startedAt;
      const name = request.params.source;
      if (served.has(name)) return;
      metrics.refused.inc({ source: '(unknown)', reason: 'unknown_source' });
      return send(
        request,
        reply,
        '(unknown)',
        startedAt,
        refuse(404, 'unknown_source', `no webhook source "${name}": this ingress serves ${[...served.keys()].join(', ')}`),
      );
    },
    // Once the whole body is in (the request timeout bounds how long that may take), the in-flight
    // cap (429): a client dribbling its body holds a socket, never a slot. The slot is released
    // when the handler is done, or when the response closes if the handler never ran.
    preValidation: async (request, reply) => {
      const name = request.params.source;
      const startedAt = (request as { startedAt?: number }).startedAt ?? performance.now();
      if (!inFlight.enter()) return send(request, reply, name, startedAt, shed(metrics, name, 'in_flight', 1));
      let released = false;
      const release = () => {
        if (!released) {
          released = true;
          inFlight.leave();
        }
      };
      (request as { release?: () => void }).release = release;
      reply.raw.once('close', () => {
        if (!(request as { handling?: boolean }).handling) release();
      });
    },
    handler: async (request, reply) => {
      (request as { handling?: boolean }).handling = true;
      const startedAt = (request as { startedAt?: number }).startedAt ?? performance.now();
      const s = served.get(request.params.source)!;
      // With tracing on, the request is the root of its wake's trace (a sender's traceparent is not
      // trusted: senders are outside the fleet); the gate's spans and Temporal's follow under it.
      const attributes = { 'http.request.method': 'POST', 'http.route': '/webhooks/:source', [WakeAttr.source]: s.source.name };
      try {
        return await inSpan('POST /webhooks/:source', { kind: 'server', root: true, attributes }, async (span) => {
          const { reply: r, extra } = await handle(opts, metrics, s, request);
          span?.set({
            'http.response.status_code': r.status,
            [WakeAttr.deliveryId]: extra?.deliveryId as string | undefined,
            [WakeAttr.eventKey]: extra?.eventKey as string | undefined,
            [WakeAttr.decision]: extra?.decision as string | undefined,
            'wakegate.answer': r.reason,
          });
          if (r.status >= 500) span?.fail(r.reason);
          if (r.status >= 400 && r.status !== 429 && r.status !== 503) metrics.refused.inc({ source: s.source.name, reason: r.reason });
          if (r.status === 503) metrics.unavailable.inc({ source: s.source.name });
          return send(request, reply, s.source.name, startedAt, r, extra);
        });
      } finally {
        (request as { release?: () => void }).release?.();
      }
    },
  });

  const sources = [...served.values()].map((s) => s.source);
  return { app, metrics, inFlight, readouts: webhookReadouts(metrics, inFlight, settings, sources) };
}

/** Each webhook source with its verifier and rate bucket; a source without a trigger or a secret is refused. */
function servedSources(opts: WebhookListenerOptions): Map<string, Served> {
  const { settings } = opts;
  const served = new Map<string, Served>();
  for (const source of opts.sources) {
    if (!opts.registry.get(source.trigger)) throw new Error(`webhook source "${source.name}" feeds trigger "${source.trigger}", which is not registered`);
    const secret = opts.secrets[source.name];
    if (!secret) throw new Error(`webhook source "${source.name}" has no secret`);
    let verifier: Verifier;
    try {
      verifier = createVerifier(source.scheme, secret, settings.replayWindowS);
    } catch (err) {
      throw new Error(`webhook source "${source.name}": ${(err as Error).message}`);
    }
    served.set(source.name, { source, verifier, bucket: new TokenBucket(settings.ratePerSecond, settings.burst) });
  }
  return served;
}

/** 429 with Retry-After: the request is shed at once, nothing is buffered. */
function shed(metrics: IngressMetrics, source: string, reason: ShedReason, retryAfterS: number): Reply {
  metrics.shed.inc({ source, reason, policy: SHED_POLICY });
  return new Reply(
    429,
    errorBody(
      'shed',
      `${reason === 'rate_limit' ? `source "${source}" is over its rate limit` : 'the ingress is at its in-flight cap'}; shed policy ${SHED_POLICY}: retry after the Retry-After seconds`,
    ),
    `shed_${reason}`,
    { 'retry-after': retryAfterSeconds(retryAfterS), 'x-wakegate-shed-policy': SHED_POLICY },
  );
}

/** One delivery after its source and slot were found: signature, rate, body, mapping, then the gate. */
async function handle(
  opts: WebhookListenerOptions,
  metrics: IngressMetrics,
  s: Served,
  request: FastifyRequest,
): Promise<{ reply: Reply; extra?: Record<string, unknown> }> {
  const { settings } = opts;
  const name = s.source.name;
  const raw = request.body;
  if (!Buffer.isBuffer(raw)) return { reply: refuse(415, 'unsupported_media_type', 'send the body as application/json') };
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(request.headers)) headers[k] = Array.isArray(v) ? v.join(',') : v;

  const verdict = await s.verifier.verify(raw, headers);
  if (!verdict.ok) return { reply: refuse(401, verdict.code, verdict.message) };

  const wait = s.bucket.take();
  if (wait > 0) return { reply: shed(metrics, name, 'rate_limit', wait) };

  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    return { reply: refuse(400, 'invalid_json', `the body is not JSON: ${(err as Error).message.slice(0, 200)}`) };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { reply: refuse(400, 'invalid_json', 'the body must be a JSON object') };
  if (jsonDepth(parsed, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) return { reply: refuse(400, 'too_deep', `the body nests deeper than ${MAX_JSON_DEPTH} levels`) };
  const body = s.source.body.safeParse(parsed);
  if (!body.success) {
    const issues = body.error.issues.map((i) => ({ path: ['body', ...i.path].join('.'), message: i.message }));
    return { reply: refuse(400, 'invalid_event', `invalid ${name} body: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues) };
  }
  const query = (request.query ?? {}) as Record<string, unknown>;
  const ctx: DeliveryContext = {
    headers,
    query: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, typeof v === 'string' ? v : undefined])),
  };
  const mapped = s.source.map(body.data, ctx);
  if (mapped.kind === 'ignore') return { reply: new Reply(200, { ignored: true, reason: mapped.reason }, 'ignored') };
  if (mapped.kind === 'reject') return { reply: refuse(mapped.status, mapped.code, mapped.message, mapped.issues) };

  const deliveryId = mapped.event.deliveryId;
  const t0 = performance.now();
  try {
    const answer = await opts.client.withDeadline(Date.now() + settings.temporalTimeoutMs, () => opts.gate.admit(mapped.event));
    metrics.gateSeconds.observe({ source: name }, (performance.now() - t0) / 1000);
    const status = statusOf(answer);
    metrics.countDecision(name, answer.decision, status === 202);
    metrics.countForgotten(answer.wakes);
    const headers: Record<string, string> = status === 429 ? { 'retry-after': String(settings.unavailableRetryAfterS * 12) } : {};
    return {
      reply: new Reply(status, answerBody(answer), answer.decision, headers),
      extra: { deliveryId, eventKey: answer.eventKey, decision: answer.decision },
    };
  } catch (err) {
    if (err instanceof GateInputError) return { reply: refuse(400, err.code, err.message, err.issues), extra: { deliveryId } };
    opts.logger?.warn({ source: name, deliveryId, err: (err as Error).message }, 'Temporal did not accept the delivery');
    return {
      reply: new Reply(
        503,
        errorBody('temporal_unavailable', 'Temporal did not accept the event in time; nothing is promised: retry after Retry-After seconds'),
        'temporal_unavailable',
        { 'retry-after': String(settings.unavailableRetryAfterS) },
      ),
      extra: { deliveryId },
    };
  }
}
