import { defineTrigger, defineWebhookSource, z } from 'wakegate';

/**
 * The trigger: a ticket was opened or edited in your tracker. Its logical event key is
 * (source, entity, type, the occurredAt bucket, the fingerprint): a redelivery of the same notice is
 * the same event, and the gate answers it from the run it already started.
 */
export const tickets = defineTrigger({
  source: 'tickets',
  description: 'A ticket was opened or edited in the tracker.',
  eventTypes: ['opened', 'edited'],
  bucket: '1s',
  keyRationale: 'One logical event per (ticket, change, second of the change): the tracker resends a notice with the same time.',
  fingerprint: ['title'],
  payload: z.object({ ticketId: z.string().min(1), title: z.string().min(1).max(500) }).passthrough(),
});

/** What the tracker posts to `POST /webhooks/tickets`. */
const TicketNotice = z.object({
  action: z.enum(['opened', 'edited']),
  ticket: z.object({ id: z.string().min(1).max(100), title: z.string().min(1).max(500), updatedAt: z.string().max(64) }),
});

/**
 * `POST /webhooks/tickets`, signed with Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`). Its secret is WAKEGATE_WEBHOOK_SECRET_TICKETS; `npm start` falls back to the
 * dev secret below, a deployment never does.
 */
export const ticketsWebhook = defineWebhookSource({
  name: 'tickets',
  trigger: 'tickets',
  scheme: 'standard-webhooks',
  // base64 of "wakegate-dev-tickets-secret"
  devSecret: 'whsec_d2FrZWdhdGUtZGV2LXRpY2tldHMtc2VjcmV0',
  body: TicketNotice,
  map: (body, ctx) => ({
    kind: 'event',
    event: {
      source: 'tickets',
      entity: body.ticket.id,
      type: body.action,
      occurredAt: body.ticket.updatedAt,
      payload: { ticketId: body.ticket.id, title: body.ticket.title },
      deliveryId: ctx.headers['webhook-id'],
    },
  }),
});
