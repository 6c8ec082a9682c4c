import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import { Redis } from 'ioredis';
import { connect } from 'node:net';
import { REDIS_USER, RedisServer } from '../../tools/devserver/redis-server';
import { Gate } from '../../src/gate/gate';
import { queueHandler } from '../../src/trigger/queue/handler';
import { QueueMetrics } from '../../src/trigger/queue/metrics';
import { CONSUMER_GROUP, deadLetterKey, publish, RedisStreamsConsumer, streamKey } from '../../src/trigger/queue/redis-streams';
import { oneCallAgents } from '../helpers/agents';
import type { RunResult } from '../../src/core/run-types';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { registryOf } from '../helpers/app';

const env = useDevEnv();
let broker: RedisServer;
let redis: Redis;
before(async () => {
  await env.ready();
  broker = await RedisServer.start();
  redis = new Redis(broker.url);
  redis.on('error', () => undefined); // the broker restarts on purpose; commands are retried by the client
});
after(async () => {
  redis?.disconnect();
  await broker?.stop();
});

const gateFor = (taskQueue: string) => new Gate({ client: env.client, taskQueue, registry: registryOf(oneCallAgents()) });
const pendingCount = async (source: string) => Number(((await redis.xpending(streamKey(source), CONSUMER_GROUP)) as [number])[0]);
const executions = (workflowId: string) => env.client.workflow.count(`WorkflowId = "${workflowId}"`).then((c) => c.count);
const ping = (entity: string, extra: Record<string, unknown> = {}) => ({
  source: 'ping',
  entity,
  type: 'queue',
  occurredAt: '2026-12-02T14:05:00Z',
  payload: {},
  ...extra,
});

/** A consumer of the `ping` stream in this process, with its own metrics; stop it when done. */
function consumerFor(taskQueue: string, opts: { claimIdleMs?: number; maxAttempts?: number; gate?: Pick<Gate, 'admit'>; name?: string } = {}) {
  const metrics = new QueueMetrics(new Registry());
  const consumer = new RedisStreamsConsumer({
    redis,
    sources: ['ping'],
    claimIdleMs: opts.claimIdleMs ?? 30_000,
    batch: 16,
    blockMs: 200,
    metrics,
    consumer: opts.name,
  });
  const running = consumer.run(
    queueHandler({ gate: opts.gate ?? gateFor(taskQueue), client: env.client, temporalTimeoutMs: 5000, maxAttempts: opts.maxAttempts ?? 5 }),
  );
  return { consumer, metrics, running, stop: () => consumer.stop() };
}

describe('the queue trigger on Redis Streams and the real dev server', () => {
  test('a published message is admitted, acknowledged only after Temporal has it, and runs', async () => {
    const taskQueue = unique('queue-basic');
    const entity = unique('q');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const c = consumerFor(taskQueue);
      try {
        const id = await publish(redis, ping(entity, { deliveryId: 'producer-1' }));
        const eventKey = gateFor(taskQueue).key(ping(entity)).input.runKey;
        const result = (await eventually(
          async () =>
            env.client.workflow
              .getHandle(eventKey)
              .result()
              .catch(() => undefined),
          (r) => r !== undefined,
          15_000,
          'the run',
        )) as RunResult;
        assert.equal(result.terminalReason, 'success');
        assert.deepEqual(result.deliveryIds, ['producer-1']);
        await eventually(
          () => pendingCount('ping'),
          (n) => n === 0,
          10_000,
          'the ack',
        );
        assert.equal((await c.metrics.accepted.get()).values.find((v) => v.labels.decision === 'started')?.value, 1);
        assert.ok(id);
      } finally {
        await c.stop();
      }
    });
  });

  test('the consumer killed between accept and ack: the message is reclaimed, deduplicated, one run', async () => {
    const taskQueue = unique('queue-crash');
    const entity = unique('crash');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(__dirname, '..', 'helpers', 'queue-consumer-process.ts'),
        JSON.stringify({ temporalAddress: env.server.address, taskQueue, sources: ['ping'], claimIdleMs: 30_000 }),
      ],
      // The URL carries the broker's password: in the environment, never on a command line.
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WAKEGATE_REDIS_URL: broker.url } },
    );
    let out = '';
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    const accepted = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /ACCEPTED (\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.on('exit', () => reject(new Error(`consumer exited before accepting:\n${out}`)));
    });
    await eventually(
      async () => out,
      (o) => o.includes('CONSUMING'),
      30_000,
      'the consumer process',
    );
    await publish(redis, ping(entity, { deliveryId: 'only-once' }));
    const workflowId = await accepted;
    child.kill('SIGKILL'); // after Temporal accepted, before XACK
    await exited;
    assert.equal(await pendingCount('ping'), 1, 'the message is still pending under the dead consumer');

    await withWorker(env.nativeConnection, taskQueue, async () => {
      const c = consumerFor(taskQueue, { claimIdleMs: 500 });
      try {
        await eventually(
          () => pendingCount('ping'),
          (n) => n === 0,
          15_000,
          'the reclaimed message to be acked',
        );
        const values = (await c.metrics.accepted.get()).values;
        assert.equal((await c.metrics.reclaimed.get()).values[0]?.value, 1);
        assert.ok(
          values.some((v) => (v.labels.decision === 'in_progress' || v.labels.decision === 'completed') && v.value === 1),
          JSON.stringify(values),
        );
        assert.ok(!values.some((v) => v.labels.decision === 'started'), 'the redelivery started nothing');
        const result = (await env.client.workflow.getHandle(workflowId).result()) as RunResult;
        assert.equal(result.terminalReason, 'success');
        assert.equal(
          await eventually(
            () => executions(workflowId),
            (n) => n >= 1,
          ),
          1,
        );
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(await executions(workflowId), 1);
      } finally {
        await c.stop();
      }
    });
  });

  test('poison messages go to the dead-letter stream with their reason: bad input at once, a message never accepted after N attempts', async () => {
    const taskQueue = unique('queue-poison');
    const before = await redis.xlen(deadLetterKey('ping'));
    await redis.xadd(streamKey('ping'), '*', 'event', '{not json');
    await publish(redis, { source: 'ping', entity: 'bad\u0000entity', type: 'queue', occurredAt: '2026-12-02T14:05:00Z' });
    await publish(redis, ping(unique('extra'), { surprise: true }));
    const c = consumerFor(taskQueue);
    try {
      await eventually(
        () => redis.xlen(deadLetterKey('ping')),
        (n) => n >= before + 3,
        15_000,
        'three dead letters',
      );
      await eventually(
        () => pendingCount('ping'),
        (n) => n === 0,
        10_000,
        'the acks',
      );
    } finally {
      await c.stop();
    }
    const dead = (await redis.xrange(deadLetterKey('ping'), '-', '+'))
      .slice(before)
      .map(([, f]) => Object.fromEntries(f.reduce<[string, string][]>((acc, v, i) => (i % 2 ? acc : [...acc, [v, f[i + 1]!]]), [])));
    assert.match(dead[0]!.reason!, /^invalid_json: /);
    assert.match(dead[1]!.reason!, /^invalid_event: .*entity may not contain control characters/);
    assert.match(dead[2]!.reason!, /^invalid_event: .*surprise/);
    assert.equal(dead[0]!.event, '{not json');

    // Temporal never accepts (a gate that always fails, as when it is unreachable): after 2 deliveries, dead-lettered.
    const failing = { admit: async () => Promise.reject(new Error('Temporal unreachable (test fake)')) };
    const f = consumerFor(taskQueue, { claimIdleMs: 300, maxAttempts: 2, gate: failing });
    try {
      await publish(redis, ping(unique('never')));
      await eventually(
        () => redis.xlen(deadLetterKey('ping')),
        (n) => n >= before + 4,
        15_000,
        'the fourth dead letter',
      );
      const [, fields] = (await redis.xrevrange(deadLetterKey('ping'), '+', '-', 'COUNT', 1))[0]!;
      assert.match(fields[fields.indexOf('reason') + 1]!, /^max_attempts: delivered 2 times/);
      assert.equal(fields[fields.indexOf('attempts') + 1], '3');
      assert.equal((await f.metrics.retried.get()).values[0]?.value, 2);
      await eventually(
        () => pendingCount('ping'),
        (n) => n === 0,
        10_000,
        'the ack of the dead letter',
      );
    } finally {
      await f.stop();
    }
  });

  test('a broker restart loses nothing: messages published before it and during consumption all run once', async () => {
    const taskQueue = unique('queue-restart');
    const entities = Array.from({ length: 20 }, (_, i) => unique(`r${i}`));
    // Ten wait in the stream while no consumer runs, across a restart of the broker.
    for (const e of entities.slice(0, 10)) await publish(redis, ping(e));
    await broker.stop();
    await broker.up();
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const c = consumerFor(taskQueue);
      try {
        const acceptedSoFar = async () => (await c.metrics.accepted.get()).values.reduce((sum, v) => sum + v.value, 0);
        await eventually(acceptedSoFar, (n) => n >= 1, 15_000, 'the consumer to be working');
        // Ten more, and the broker restarts again while the consumer is working.
        for (const e of entities.slice(10)) await publish(redis, ping(e));
        await broker.stop();
        await broker.up();
        const gate = gateFor(taskQueue);
        for (const e of entities) {
          const key = gate.key(ping(e)).input.runKey;
          const result = (await eventually(
            () =>
              env.client.workflow
                .getHandle(key)
                .result()
                .catch(() => undefined),
            (r) => r !== undefined,
            30_000,
            `the run of ${e}`,
          )) as RunResult;
          assert.equal(result.terminalReason, 'success');
        }
        await eventually(
          () => pendingCount('ping'),
          (n) => n === 0,
          30_000,
          'every message acked',
        );
        for (const e of entities) assert.equal(await executions(gate.key(ping(e)).input.runKey), 1);
      } finally {
        await c.stop();
      }
    });
  });

  test('the broker lets in no one without its password; consumer and producer users with only the documented ACLs deliver', async () => {
    // Without credentials, or with a wrong password: refused before any command runs.
    assert.match(await rawCommand('XADD wakegate:queue:ping * event {}'), /^-NOAUTH /);
    assert.match(await rawCommand(`AUTH ${REDIS_USER} not-the-password`), /^-WRONGPASS /);

    // A deployment's own Redis, as docs/OPERATIONS.md sets it up: each side may do only its part.
    await redis.call('ACL', 'SETUSER', 'wakegate-consumer', 'reset', 'on', '>consumer-secret-0123456789', ...CONSUMER_ACL.split(' '));
    await redis.call('ACL', 'SETUSER', 'wakegate-producer', 'reset', 'on', '>producer-secret-0123456789', ...PRODUCER_ACL.split(' '));
    const asConsumer = new Redis({ port: broker.port, username: 'wakegate-consumer', password: 'consumer-secret-0123456789' });
    const asProducer = new Redis({ port: broker.port, username: 'wakegate-producer', password: 'producer-secret-0123456789' });
    const taskQueue = unique('queue-acl');
    const entity = unique('acl');
    const consumer = new RedisStreamsConsumer({
      redis: asConsumer,
      sources: ['ping'],
      claimIdleMs: 30_000,
      batch: 8,
      blockMs: 200,
      metrics: new QueueMetrics(new Registry()),
    });
    const running = consumer.run(queueHandler({ gate: gateFor(taskQueue), client: env.client, temporalTimeoutMs: 5000, maxAttempts: 5 }));
    try {
      await assert.rejects(asProducer.get('anything'), /NOPERM/);
      await assert.rejects(asConsumer.xadd('elsewhere', '*', 'event', '{}'), /NOPERM/);
      await publish(asProducer, ping(entity, { deliveryId: 'acl-1' }));
      const workflowId = gateFor(taskQueue).key(ping(entity)).input.runKey;
      await eventually(
        () => executions(workflowId),
        (n) => n === 1,
        15_000,
        'the run started from the queue',
      );
      await eventually(
        () => pendingCount('ping'),
        (n) => n === 0,
        10_000,
        'the ack',
      );
    } finally {
      await consumer.stop();
      await running.catch(() => undefined);
      asConsumer.disconnect();
      asProducer.disconnect();
    }
  });
});

/** One inline command on a fresh connection to the broker, with no credentials: its first reply line. */
function rawCommand(line: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: broker.port });
    socket.once('connect', () => socket.write(`${line}\r\n`));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(d.toString());
    });
    socket.once('error', reject);
  });
}

/** The ACLs docs/OPERATIONS.md gives a deployment's own Redis ("Queue trigger"): keep the two in step. */
const CONSUMER_ACL =
  'resetchannels resetkeys ~wakegate:queue:* ~wakegate:dead:* -@all +info +xgroup|create +xreadgroup +xautoclaim +xpending +xack +xadd +xinfo|groups +multi +exec';
const PRODUCER_ACL = 'resetchannels resetkeys ~wakegate:queue:* -@all +info +xadd';
