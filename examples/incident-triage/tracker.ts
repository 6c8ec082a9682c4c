import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';

/** One ticket as the tracker stores it. `reference` is the caller's own key (the effect key); the tracker does not deduplicate by it. */
export interface Ticket {
  id: string;
  title: string;
  severity: string;
  reference: string;
  createdAt: string;
}

/** One recent error of a service, as the error tracker reports it. */
export interface TrackedError {
  service: string;
  message: string;
  count: number;
  lastSeen: string;
}

const SAMPLE_ERRORS = (service: string): TrackedError[] => [
  { service, message: 'TypeError: cannot read properties of undefined (reading "id")', count: 412, lastSeen: '2026-12-04T18:01:00Z' },
  { service, message: 'upstream timeout after 30000 ms (payments-db)', count: 37, lastSeen: '2026-12-04T17:58:00Z' },
  { service, message: 'ECONNRESET while calling inventory', count: 5, lastSeen: '2026-12-04T17:40:00Z' },
];

/**
 * A tiny ticket and error tracker stand-in, on 127.0.0.1 (a free port):
 * - `POST /tickets {title, severity, reference}` creates a ticket. It takes NO idempotency key: posting
 *   it twice makes two tickets. That is why `file_ticket` is a `reconcile` effect.
 * - `GET /tickets?reference=R` lists the tickets carrying that reference (503 while `failSearch` is set).
 * - `GET /errors?service=S` lists a few recent errors of a service.
 *
 * Tests read `tickets` and `errorReads`, flip `failSearch`, and set `afterCreate` to hold the answer of a
 * create after the ticket exists (the window a worker can die in with the effect applied).
 */
export function trackerService() {
  const app = Fastify({ forceCloseConnections: true });
  const tickets: Ticket[] = [];
  const errorReads: string[] = [];
  const state = {
    app,
    tickets,
    /** The `service` of every `GET /errors`, in order. */
    errorReads,
    /** While true, `GET /tickets` answers 503: the tracker cannot say what exists. */
    failSearch: false,
    /** Runs after a ticket is stored and before the answer is sent: a test holds the answer here. */
    afterCreate: undefined as ((ticket: Ticket, req: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined,
    /** Listen on 127.0.0.1 (a free port); resolves to the base URL. */
    async start(): Promise<string> {
      return app.listen({ host: '127.0.0.1', port: 0 });
    },
    close: () => app.close(),
  };

  app.post<{ Body: { title?: unknown; severity?: unknown; reference?: unknown } }>('/tickets', async (req, reply) => {
    const { title, severity, reference } = req.body ?? {};
    if (typeof title !== 'string' || !title || typeof severity !== 'string' || typeof reference !== 'string' || !reference) {
      return reply.code(400).send({ error: 'title, severity and reference are required strings' });
    }
    const ticket: Ticket = { id: `TCK-${tickets.length + 1}-${randomUUID().slice(0, 6)}`, title, severity, reference, createdAt: new Date().toISOString() };
    tickets.push(ticket);
    await state.afterCreate?.(ticket, req, reply);
    return reply.code(201).send(ticket);
  });

  app.get<{ Querystring: { reference?: string } }>('/tickets', async (req, reply) => {
    if (state.failSearch) return reply.code(503).send({ error: 'search is unavailable' });
    const { reference } = req.query;
    if (!reference) return reply.code(400).send({ error: 'reference is required' });
    return { tickets: tickets.filter((t) => t.reference === reference) };
  });

  app.get<{ Querystring: { service?: string } }>('/errors', async (req, reply) => {
    const { service } = req.query;
    if (!service) return reply.code(400).send({ error: 'service is required' });
    errorReads.push(service);
    return { errors: SAMPLE_ERRORS(service) };
  });

  return state;
}

export type TrackerService = ReturnType<typeof trackerService>;
