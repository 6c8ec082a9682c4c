import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from '../config/config';
import type { Gate } from '../gate/gate';
import type { Wakegate } from '../runtime/wakegate';
import { queueHandler } from '../trigger/queue/handler';
import { QueueMetrics } from '../trigger/queue/metrics';
import { RedisStreamsConsumer, streamKey } from '../trigger/queue/redis-streams';
import { boot } from './boot';
import { announce, settledBy, untilStopped, type RunningPart } from './running';

export interface QueuePartOptions {
  app: Wakegate;
  config: Config;
  client: Client;
  /** The broker, with its user and password: never logged. */
  redisUrl: string;
  logger: Logger;
  /** Default: a gate of the deployment's on the configured task queue (closed with the consumer). */
  gate?: Gate;
  metrics?: QueueMetrics;
}

/**
 * The queue consumer on Redis Streams: one stream per trigger source (`wakegate:queue:<source>`, the
 * schedule's excepted), group `wakegate`, each message admitted through the gate and acknowledged once
 * Temporal has its event. Stopping it reads no more and settles the messages in hand within 5 s; one
 * not acknowledged by then stays pending and is reclaimed by another consumer (or the next one) after
 * WAKEGATE_QUEUE_CLAIM_IDLE_MS, and its second admission is answered from the run that has it.
 */
export function startQueue(opts: QueuePartOptions): RunningPart & { streams: string[] } {
  const { app, config, client, logger } = opts;
  const redis = new Redis(opts.redisUrl);
  // The consumer loop reports what it could not do; this keeps the client's own errors off stderr.
  redis.on('error', (err: Error) => logger.debug({ err: err.message }, 'redis connection error'));
  const sources = app.registry.sources().filter((s) => s !== 'schedule');
  const ownGate = opts.gate ? undefined : app.gate(client, config.taskQueue);
  const consumer = new RedisStreamsConsumer({ redis, sources, ...config.ingress.queue, logger, ...(opts.metrics ? { metrics: opts.metrics } : {}) });
  const handler = queueHandler({
    gate: opts.gate ?? ownGate!,
    client,
    temporalTimeoutMs: config.ingress.temporalTimeoutMs,
    maxAttempts: config.ingress.queue.maxAttempts,
  });
  const running = consumer.run(handler);
  // The loop may outlast the stop's grace (a gate call waiting on Temporal): stopping ends the part all the same.
  const stopped = settledBy();
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await consumer.stop();
      await ownGate?.close().catch(() => undefined);
      redis.disconnect();
      stopped.resolve();
    })());
  return { name: 'queue', streams: sources.map(streamKey), done: Promise.race([running, stopped.promise]), stop };
}

export interface QueueCommandOptions {
  /** Serve the consumer's Prometheus metrics at `http://<metricsHost>:<metricsPort>/metrics`; unset: none. */
  metricsPort?: number;
  /** Default 127.0.0.1. */
  metricsHost?: string;
}

/**
 * `wakegate queue` (and `workers/queue.ts`): a queue consumer alone, on the Redis of
 * WAKEGATE_REDIS_URL (required), admitting into the configured Temporal. Prints one JSON line with
 * its streams (never the URL); on SIGTERM or SIGINT it drains and resolves 0.
 */
export async function runQueue(opts: QueueCommandOptions = {}): Promise<number> {
  const ctx = boot('wakegate-queue');
  const redisUrl = ctx.config.ingress.redisUrl;
  if (!redisUrl) throw new Error('wakegate queue: WAKEGATE_REDIS_URL is unset: name the Redis to consume (redis://user:password@host:port)');
  const registry = new Registry();
  const metrics = new QueueMetrics(registry);
  const client = await ctx.app.client();
  const server = opts.metricsPort === undefined ? undefined : await metricsListener(registry, opts.metricsHost ?? '127.0.0.1', opts.metricsPort);
  try {
    const queue = startQueue({ app: ctx.app, config: ctx.config, client, redisUrl, logger: ctx.logger, metrics });
    announce({
      process: 'queue',
      temporal: ctx.config.temporal.connectionOptions.address,
      taskQueue: ctx.config.taskQueue,
      streams: queue.streams,
      deadLetters: 'wakegate:dead:<source>',
      ...(server ? { metrics: `${server.url}/metrics` } : {}),
      pid: process.pid,
    });
    ctx.logger.info({ streams: queue.streams }, 'queue consuming');
    return await untilStopped([queue], ctx.logger);
  } finally {
    await server?.close();
    await client.connection.close();
    await ctx.tracing?.shutdown();
  }
}

/** A listener that serves `registry` at `GET /metrics` and nothing else. */
async function metricsListener(registry: Registry, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') return void res.writeHead(404).end();
    void registry.metrics().then((body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve()));
  const address = server.address() as AddressInfo;
  return {
    url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
