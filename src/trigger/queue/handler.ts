import type { Client } from '@temporalio/client';
import { isRefusal } from '../../core/decision';
import { GateInputError } from '../../gate/errors';
import type { Gate } from '../../gate/gate';
import type { MessageHandler, QueueMessage, Settlement } from './consumer';
import { WakeAttr } from '../../core/trace-context';
import { inSpan } from '../../tracing/spans';

export interface QueueHandlerOptions {
  gate: Pick<Gate, 'admit'>;
  /** The gate's client: its deadline bounds the wait for Temporal. */
  client: Client;
  temporalTimeoutMs: number;
  /** Deliveries before a message that was never accepted goes to the dead-letter stream. */
  maxAttempts: number;
}

/**
 * The queue trigger's handler, the same for every broker: a message body is the event without its
 * source (`{entity, type, occurredAt, payload, version?, deliveryId?}`); its source is the stream
 * it came from. `ack` only after the gate returned (Temporal durably has the event, or already had
 * it); a supervisor's `refused` (over a cap) is left for redelivery; bad input and other refusals are dead-lettered at once with the reason (retrying cannot help);
 * anything else is left for redelivery, and dead-lettered after `maxAttempts` deliveries.
 */
export function queueHandler(opts: QueueHandlerOptions): MessageHandler {
  const settle = settlement(opts);
  // With tracing on, each delivery of a message is the root of a trace: the gate's spans and Temporal's follow under it.
  return (message) =>
    inSpan(
      `process ${message.source}`,
      {
        kind: 'consumer',
        root: true,
        attributes: { 'messaging.message.id': message.id, [WakeAttr.source]: message.source, 'wakegate.queue.delivery': message.attempts },
      },
      async (span) => {
        const s = await settle(message);
        span?.set({ 'wakegate.queue.settlement': s.kind, [WakeAttr.decision]: s.kind === 'ack' ? s.decision : undefined });
        return s;
      },
    );
}

/** What becomes of one message: the handler's rules above, without its span. */
function settlement(opts: QueueHandlerOptions): (message: QueueMessage) => Promise<Settlement> {
  return async (message): Promise<Settlement> => {
    if (message.attempts > opts.maxAttempts) return { kind: 'dead', reason: `max_attempts: delivered ${message.attempts - 1} times without being accepted` };
    let body: unknown;
    try {
      body = JSON.parse(message.body);
    } catch (err) {
      return { kind: 'dead', reason: `invalid_json: ${(err as Error).message.slice(0, 200)}` };
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'dead', reason: 'invalid_json: the body must be a JSON object' };
    const fields = body as Record<string, unknown>;
    const event = { deliveryId: `queue:${message.source}:${message.id}`, ...fields, source: message.source };
    try {
      const answer = await opts.client.withDeadline(Date.now() + opts.temporalTimeoutMs, () => opts.gate.admit(event));
      // Over a cap with policy refuse: left in the stream, redelivered later (the window slides).
      if (answer.decision === 'refused') return { kind: 'retry', reason: `refused: ${answer.message ?? 'over a rolling cap'}` };
      if (isRefusal(answer.decision)) return { kind: 'dead', reason: `${answer.decision}: ${answer.message ?? 'refused by the gate'}` };
      return { kind: 'ack', decision: answer.decision };
    } catch (err) {
      if (err instanceof GateInputError) return { kind: 'dead', reason: `${err.code}: ${err.message}` };
      return { kind: 'retry', reason: (err as Error).message };
    }
  };
}
