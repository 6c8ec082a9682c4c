import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { WakeEventInput } from '../../core/event';
import type { QueueMetrics } from './metrics';
import type { MessageHandler, QueueConsumer, QueueMessage } from './consumer';

/** The stream a trigger source's messages are published to. */
export const streamKey = (source: string): string => `wakegate:queue:${source}`;
/** Where that stream's poison messages go, each with its reason. */
export const deadLetterKey = (source: string): string => `wakegate:dead:${source}`;
/** The consumer group every wakegate consumer joins. */
export const CONSUMER_GROUP = 'wakegate';

/** Publish one event to its source's stream (producers, tests, benchmarks). Returns the entry id. */
export async function publish(redis: Redis, event: Omit<WakeEventInput, 'source'> & { source: string }): Promise<string> {
  const { source, ...rest } = event;
  return (await redis.xadd(streamKey(source), '*', 'event', JSON.stringify(rest)))!;
}

export interface RedisStreamsOptions {
  /** Commands (ack, claim, dead-letter); a duplicate of it does the blocking reads. */
  redis: Redis;
  /** Trigger sources to consume: one stream each. */
  sources: readonly string[];
  /** Reclaim (XAUTOCLAIM) a message another consumer left unacknowledged this long, ms. */
  claimIdleMs: number;
  /** Messages read and worked on at once (the consumer's whole buffer). */
  batch: number;
  /** How long a read blocks waiting for new messages, ms. Default 1000. */
  blockMs?: number;
  /** This consumer's name in the group; unique per process by default. */
  consumer?: string;
  metrics?: QueueMetrics;
  logger?: Logger;
}

type Entry = [id: string, fields: string[] | null];

/**
 * A consumer group per source stream (`wakegate:queue:<source>`, group `wakegate`). Each loop it
 * first reclaims (XAUTOCLAIM) messages idle longer than `claimIdleMs` (a consumer that died between
 * accept and ack, or a retry of its own), then reads new ones (XREADGROUP). A message is
 * acknowledged (XACK) only after the handler says the gate accepted it; a dead one is appended to
 * `wakegate:dead:<source>` with its reason and acknowledged in one MULTI. At most `batch` messages
 * are in hand at once: the backlog stays in Redis, visible as `wakegate_queue_pending` and `_lag`.
 */
export class RedisStreamsConsumer implements QueueConsumer {
  readonly name: string;
  private stopping = false;
  private loop?: Promise<void>;
  private readonly reader: Redis;

  constructor(private readonly opts: RedisStreamsOptions) {
    this.name = opts.consumer ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.reader = opts.redis.duplicate();
    // Connection errors surface in the loop's commands (and are retried there); this only keeps them off stderr.
    this.reader.on('error', (err: Error) => opts.logger?.debug({ err: err.message }, 'queue consumer: reader connection error'));
  }

  async run(handler: MessageHandler): Promise<void> {
    for (const source of this.opts.sources) {
      try {
        await this.opts.redis.xgroup('CREATE', streamKey(source), CONSUMER_GROUP, '0', 'MKSTREAM');
      } catch (err) {
        if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
      }
    }
    this.loop = this.consume(handler);
    return this.loop;
  }

  /**
   * Stop reading and wait up to `graceMs` (default 5000) for the messages in hand to be settled.
   * A message not acknowledged by then stays pending in Redis and is reclaimed by another consumer
   * (or this one's successor) after `claimIdleMs`: stopping never loses one.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loop?.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.reader.disconnect();
  }

  private async consume(handler: MessageHandler): Promise<void> {
    const { redis, sources, batch } = this.opts;
    while (!this.stopping) {
      try {
        for (const source of sources) {
          const [, claimed] = (await redis.xautoclaim(streamKey(source), CONSUMER_GROUP, this.name, this.opts.claimIdleMs, '0-0', 'COUNT', batch)) as [
            string,
            Entry[],
          ];
          const live = claimed.filter((e): e is [string, string[]] => e[1] !== null);
          if (live.length) this.opts.metrics?.reclaimed.inc({ source }, live.length);
          await Promise.all(
            live.map(async ([id, fields]) => this.settle(handler, { id, source, body: field(fields, 'event'), attempts: await this.deliveries(source, id) })),
          );
        }
        if (this.stopping) break;
        const read = await this.reader.call(
          'XREADGROUP',
          'GROUP',
          CONSUMER_GROUP,
          this.name,
          'COUNT',
          String(batch),
          'BLOCK',
          String(this.opts.blockMs ?? 1000),
          'STREAMS',
          ...sources.map(streamKey),
          ...sources.map(() => '>'),
        );
        const messages: QueueMessage[] = [];
        for (const [key, entries] of streamsReply(read)) {
          const source = key.slice(streamKey('').length);
          for (const [id, fields] of entries) if (fields) messages.push({ id, source, body: field(fields, 'event'), attempts: 1 });
        }
        await Promise.all(messages.map((m) => this.settle(handler, m)));
        await this.observeBacklog();
      } catch (err) {
        if (this.stopping) break;
        // The broker is down or restarting: nothing was acknowledged, so nothing is lost; try again.
        this.opts.logger?.warn({ err: (err as Error).message, consumer: this.name }, 'queue consumer: broker error, retrying');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private async deliveries(source: string, id: string): Promise<number> {
    const rows = (await this.opts.redis.xpending(streamKey(source), CONSUMER_GROUP, id, id, 1)) as [string, string, number, number][];
    return rows[0]?.[3] ?? 1;
  }

  private async settle(handler: MessageHandler, m: QueueMessage): Promise<void> {
    const { redis, metrics } = this.opts;
    const outcome = await handler(m);
    switch (outcome.kind) {
      case 'ack':
        await redis.xack(streamKey(m.source), CONSUMER_GROUP, m.id);
        metrics?.accepted.inc({ source: m.source, decision: outcome.decision });
        return;
      case 'dead':
        await redis
          .multi()
          .xadd(deadLetterKey(m.source), '*', 'id', m.id, 'reason', outcome.reason, 'attempts', String(m.attempts), 'event', m.body)
          .xack(streamKey(m.source), CONSUMER_GROUP, m.id)
          .exec();
        metrics?.deadLettered.inc({ source: m.source, reason: outcome.reason.split(':')[0]! });
        this.opts.logger?.warn({ source: m.source, id: m.id, reason: outcome.reason }, 'queue message dead-lettered');
        return;
      case 'retry':
        // Left pending: XAUTOCLAIM hands it out again after claimIdleMs, counting the delivery.
        metrics?.retried.inc({ source: m.source });
        return;
    }
  }

  private async observeBacklog(): Promise<void> {
    const metrics = this.opts.metrics;
    if (!metrics) return;
    for (const source of this.opts.sources) {
      const groups = (await this.opts.redis.call('XINFO', 'GROUPS', streamKey(source))) as (string | number | null)[][];
      for (const g of groups) {
        const info: Record<string, unknown> = {};
        for (let i = 0; i + 1 < g.length; i += 2) info[String(g[i])] = g[i + 1];
        if (info.name !== CONSUMER_GROUP) continue;
        metrics.pending.set({ source }, Number(info.pending ?? 0));
        if (info.lag !== null && info.lag !== undefined) metrics.lag.set({ source }, Number(info.lag));
      }
    }
  }
}

/**
 * XREADGROUP's reply as [stream, entries] pairs, whichever shape the client hands over: RESP2's
 * array of pairs, a flat [key, entries, key, entries] list (what ioredis 6 returns), or a RESP3 map.
 */
function streamsReply(reply: unknown): [string, Entry[]][] {
  if (!reply) return [];
  if (reply instanceof Map) return [...reply.entries()] as [string, Entry[]][];
  if (Array.isArray(reply)) {
    if (reply.length && typeof reply[0] === 'string') {
      const pairs: [string, Entry[]][] = [];
      for (let i = 0; i + 1 < reply.length; i += 2) pairs.push([reply[i] as string, reply[i + 1] as Entry[]]);
      return pairs;
    }
    return reply as [string, Entry[]][];
  }
  return Object.entries(reply as Record<string, Entry[]>);
}

function field(fields: string[], name: string): string {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1]!;
  return '';
}
