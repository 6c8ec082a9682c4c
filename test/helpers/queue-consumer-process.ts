/**
 * A queue consumer as a process of its own, for the crash test: it admits each message through the
 * real gate, prints `ACCEPTED <workflowId>` once Temporal has the event, then stalls before the ack
 * so the test can SIGKILL it exactly between accept and ack. The stall is this test fake's, not the
 * product's. Argument: JSON {temporalAddress, taskQueue, sources, claimIdleMs}; the broker's URL
 * (with its password) in WAKEGATE_REDIS_URL.
 */
import { Client, Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { Gate } from '../../src/gate/gate';
import { queueHandler } from '../../src/trigger/queue/handler';
import { RedisStreamsConsumer } from '../../src/trigger/queue/redis-streams';
import { registryOf } from './app';

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as { temporalAddress: string; taskQueue: string; sources: string[]; claimIdleMs: number };
  const client = new Client({ connection: await Connection.connect({ address: args.temporalAddress }) });
  const gate = new Gate({ client, taskQueue: args.taskQueue, registry: registryOf() });
  const stalling = {
    async admit(event: unknown) {
      const answer = await gate.admit(event);
      process.stdout.write(`ACCEPTED ${answer.runKey}\n`);
      await new Promise((r) => setTimeout(r, 600_000));
      return answer;
    },
  };
  const consumer = new RedisStreamsConsumer({
    redis: new Redis(process.env.WAKEGATE_REDIS_URL!),
    sources: args.sources,
    claimIdleMs: args.claimIdleMs,
    batch: 8,
    consumer: 'doomed',
  });
  process.stdout.write('CONSUMING\n');
  await consumer.run(queueHandler({ gate: stalling, client, temporalTimeoutMs: 5000, maxAttempts: 5 }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
