import Fastify, { type FastifyInstance } from 'fastify';

export interface ChannelMessage {
  id: string;
  channel: string;
  text: string;
  idempotencyKey?: string;
}

/**
 * Stand-in for a chat channel API that honours `Idempotency-Key`: a second POST with a key it has
 * seen returns the first message (header `Idempotent-Replayed: true`) and posts nothing.
 */
export function channelService(): { app: FastifyInstance; messages: ChannelMessage[] } {
  const app = Fastify();
  const messages: ChannelMessage[] = [];
  const byKey = new Map<string, ChannelMessage>();
  app.post<{ Body: { channel?: string; text?: string } }>('/messages', async (req, reply) => {
    const key = req.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key ? key : undefined;
    const seen = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
    if (seen) return reply.code(200).header('idempotent-replayed', 'true').send(seen);
    if (typeof req.body?.text !== 'string') return reply.code(400).send({ error: 'text is required' });
    const msg: ChannelMessage = { id: `msg-${messages.length + 1}`, channel: req.body.channel ?? 'general', text: req.body.text, idempotencyKey };
    messages.push(msg);
    if (idempotencyKey) byKey.set(idempotencyKey, msg);
    return reply.code(201).send(msg);
  });
  app.get('/messages', async () => messages);
  return { app, messages };
}
