import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';

/** One event as PagerDuty's Events API v2 takes it. */
const Event = z.discriminatedUnion('event_action', [
  z.object({
    routing_key: z.string().min(1).max(64),
    event_action: z.literal('trigger'),
    dedup_key: z.string().min(1).max(255).optional(),
    payload: z.object({
      summary: z.string().min(1).max(1024),
      source: z.string().min(1),
      severity: z.enum(['critical', 'error', 'warning', 'info']),
      timestamp: z.string().datetime({ offset: true }).optional(),
      component: z.string().optional(),
      group: z.string().optional(),
      class: z.string().optional(),
      custom_details: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  z.object({ routing_key: z.string().min(1).max(64), event_action: z.enum(['acknowledge', 'resolve']), dedup_key: z.string().min(1).max(255) }),
]);

export interface Incident {
  dedupKey: string;
  summary: string;
  severity: string;
  source: string;
  details: Record<string, unknown>;
  /** Triggers received with this dedup key (a retried page adds one; it opens no second incident). */
  triggers: number;
  openedAt: string;
  status: 'triggered' | 'acknowledged' | 'resolved';
}

/**
 * A local stand-in for PagerDuty's Events API v2 (`POST /v2/enqueue`): `npm start`'s pager, so a
 * trip is seen without an account, and the fake the real adapter is tested against. It validates
 * events as PagerDuty does (400 `invalid event`), opens one incident per open dedup key (a trigger
 * for an open incident is deduplicated, as PagerDuty does), and writes a new incident loudly to the
 * terminal. `GET /incidents` lists them.
 */
export function pagerService(opts: { log?: (text: string) => void } = {}): { app: FastifyInstance; incidents: Incident[]; events: unknown[] } {
  const log = opts.log ?? ((text: string) => process.stderr.write(text));
  const app = Fastify();
  const incidents: Incident[] = [];
  const events: unknown[] = [];
  let n = 0;
  app.post('/v2/enqueue', async (req, reply) => {
    const parsed = Event.safeParse(req.body);
    if (!parsed.success) {
      return reply
        .code(400)
        .send({ status: 'invalid event', message: 'Event object is invalid', errors: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) });
    }
    const ev = parsed.data;
    events.push(ev);
    if (ev.event_action !== 'trigger') {
      const open = incidents.find((i) => i.dedupKey === ev.dedup_key && i.status !== 'resolved');
      if (open) open.status = ev.event_action === 'resolve' ? 'resolved' : 'acknowledged';
      return reply.code(202).send({ status: 'success', message: 'Event processed', dedup_key: ev.dedup_key });
    }
    const dedupKey = ev.dedup_key ?? `standin-${++n}`;
    const open = incidents.find((i) => i.dedupKey === dedupKey && i.status !== 'resolved');
    if (open) {
      open.triggers += 1;
    } else {
      const incident: Incident = {
        dedupKey,
        summary: ev.payload.summary,
        severity: ev.payload.severity,
        source: ev.payload.source,
        details: ev.payload.custom_details ?? {},
        triggers: 1,
        openedAt: new Date().toISOString(),
        status: 'triggered',
      };
      incidents.push(incident);
      log(
        [
          '',
          `*** PAGE (${incident.severity}) ${incident.summary}`,
          `    source: ${incident.source}; dedup key: ${dedupKey}`,
          ...Object.entries(incident.details).map(([k, v]) => `    ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`),
          '',
        ].join('\n'),
      );
    }
    return reply.code(202).send({ status: 'success', message: 'Event processed', dedup_key: dedupKey });
  });
  app.get('/incidents', async () => incidents);
  return { app, incidents, events };
}
