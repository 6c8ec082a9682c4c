/**
 * One soak queue consumer: the deployment's gate behind a Redis Streams consumer of group `wakegate`,
 * named by SOAK_CONSUMER (two of them share the group; a killed one's claims are reclaimed after
 * WAKEGATE_QUEUE_CLAIM_IDLE_MS). Settings as any process reads them.
 */
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { connectClient } from '../../src/config/temporal';
import { queueHandler } from '../../src/trigger/queue/handler';
import { RedisStreamsConsumer } from '../../src/trigger/queue/redis-streams';
import { loadApp } from '../../src/runtime/load-app';

async function main(): Promise<void> {
  const config = loadConfig();
  const wakegate = loadApp(config.app);
  const client = await connectClient(config);
  const gate = wakegate.gate(client, config.taskQueue);
  const redis = new Redis(config.ingress.redisUrl!);
  redis.on('error', () => undefined); // the consumer loop reports what it could not do; Redis restarts in the soak
  const consumer = new RedisStreamsConsumer({
    redis,
    sources: wakegate.registry.sources().filter((s) => s !== 'schedule'),
    ...config.ingress.queue,
    consumer: process.env.SOAK_CONSUMER ?? `soak-${process.pid}`,
  });
  process.stdout.write('CONSUMING\n');
  await consumer.run(queueHandler({ gate, client, temporalTimeoutMs: config.ingress.temporalTimeoutMs, maxAttempts: config.ingress.queue.maxAttempts }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
