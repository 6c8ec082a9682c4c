/**
 * The broker-neutral side of the queue trigger. A broker adapter (Redis Streams today) turns its
 * deliveries into {@link QueueMessage}s and settles each as the handler says; the handler (see
 * handler.ts) is the same for every broker. To add SQS or Kafka, implement {@link QueueConsumer}:
 * ack = DeleteMessage / commit the offset, retry = let the visibility timeout lapse / do not commit,
 * dead = send to the DLQ (SQS redrive policy or a dead-letter topic) then ack, attempts =
 * ApproximateReceiveCount / a retry-count header.
 */

/** One message as any broker hands it over. */
export interface QueueMessage {
  /** The broker's id for this message (stream entry id, SQS MessageId, partition/offset): tracing only, never a key. */
  id: string;
  /** The trigger source whose stream (queue, topic) it came from. */
  source: string;
  /** The body as the producer wrote it: JSON of the event without its source. */
  body: string;
  /** Deliveries of this message so far, this one included (1 on first delivery). */
  attempts: number;
}

/**
 * What to do with a message: `ack` once the gate durably accepted it; `retry` to leave it with the
 * broker for redelivery (Temporal did not answer); `dead` to move it to the dead-letter stream with
 * the reason, then ack it (it can never be accepted, or it ran out of attempts).
 */
export type Settlement = { kind: 'ack'; decision: string } | { kind: 'retry'; reason: string } | { kind: 'dead'; reason: string };

export type MessageHandler = (message: QueueMessage) => Promise<Settlement>;

/** A consumer of one broker: reads, hands each message to the handler, settles it as told. */
export interface QueueConsumer {
  /** Consume until {@link stop}; resolves when the loop has ended. */
  run(handler: MessageHandler): Promise<void>;
  /** Stop reading; messages in hand are settled first. */
  stop(): Promise<void>;
}
