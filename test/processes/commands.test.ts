import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { Redis } from 'ioredis';
import { RedisServer } from '../../tools/devserver/redis-server';
import { CONSUMER_GROUP, publish, streamKey } from '../../src/trigger/queue/redis-streams';
import type { RunResult } from '../../src/core/run-types';
import app, { pingsSource } from '../fixtures/processes-app';
import { spawnCommand, type CommandProcess } from '../helpers/command-process';
import { eventually, useDevEnv, unique } from '../helpers/env';

/*
 * Each process of a deployment started from its own `wakegate` command, as an operator starts it,
 * sent work, and stopped with SIGTERM (or SIGINT) while that work is in hand: it exits 0, and every
 * event it took completes, once, on the processes that come after it.
 */
const env = useDevEnv();
let broker: RedisServer;
let redis: Redis;
const spawned: CommandProcess[] = [];
const taskQueue = unique('processes');
const SECRET = pingsSource.devSecret!;

before(async () => {
  await env.ready();
  broker = await RedisServer.start();
  redis = new Redis(broker.url);
});
after(async () => {
  await Promise.all(spawned.map((p) => p.stop('SIGKILL')));
  redis?.disconnect();
  await broker?.stop();
});

/** `wakegate <args>` against this file's dev server, task queue, deployment and Redis. */
function start(args: string[], extra: Record<string, string> = {}): CommandProcess {
  const p = spawnCommand(args, {
    TEMPORAL_ADDRESS: env.server.address,
    TEMPORAL_NAMESPACE: env.server.namespace,
    WAKEGATE_TASK_QUEUE: taskQueue,
    WAKEGATE_APP: 'test/fixtures/processes-app.ts',
    WAKEGATE_LOG_LEVEL: 'info',
    ...extra,
  });
  spawned.push(p);
  return p;
}

const gate = () => app.gate(env.client, taskQueue);
const ping = (entity: string, holdMs: number) => ({ source: 'ping', entity, type: 'check', occurredAt: '2026-12-02T14:05:00Z', payload: { holdMs } });
const executions = async (workflowId: string) => (await env.client.workflow.count(`WorkflowId = "${workflowId}"`)).count;
const result = (workflowId: string) => env.client.workflow.getHandle(workflowId).result() as Promise<RunResult>;

/** Every run named ends `success`, and each workflow ID was started once. */
async function completedOnce(workflowIds: string[]): Promise<void> {
  await eventually(
    async () => Promise.all(workflowIds.map(executions)),
    (counts) => counts.every((c) => c >= 1),
    30_000,
    'a run for every event',
  );
  for (const id of workflowIds) {
    const r = await result(id);
    assert.equal(r.terminalReason, 'success', `${id}: ${r.summary}`);
  }
  await eventually(
    async () => Promise.all(workflowIds.map(executions)),
    (counts) => counts.every((c) => c === 1),
    15_000,
    'one execution per run',
  );
}

describe('every process from its wakegate command, drained on SIGTERM', () => {
  let worker: CommandProcess;

  test('wakegate worker: SIGTERM lets the activity in hand finish, exits 0, and the next worker completes the run', async () => {
    worker = start(['worker']);
    const up = await worker.ready;
    assert.equal(up.taskQueue, taskQueue);
    const answer = await gate().admit(ping(unique('held'), 3000));
    const handle = env.client.workflow.getHandle(answer.runKey);
    // The canary's hold is in hand (started on this worker, heartbeating) when the signal comes.
    const inHand = await eventually(
      async () => (await handle.describe()).raw.pendingActivities?.find((a) => a.state === 2 && a.lastHeartbeatTime),
      (a) => a !== undefined,
      30_000,
      'the hold activity to start',
    );
    const exit = await worker.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, worker.output());
    // Drained, not abandoned: the activity in hand finished on its first attempt before the worker left
    // (none left started, to be retried after a timeout).
    const history = (await handle.fetchHistory()).events ?? [];
    const scheduled = history.find((e) => e.activityTaskScheduledEventAttributes?.activityId === inHand!.activityId)!;
    const completed = history.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
    assert.ok(completed, `activity ${inHand!.activityId} did not complete before the worker exited:\n${worker.output().slice(-2000)}`);
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    assert.deepEqual(
      pending.filter((a) => a.state === 2),
      [],
      'an activity left started by the worker that exited',
    );
    worker = start(['worker']);
    await worker.ready;
    await completedOnce([answer.runKey]);
  });

  test('wakegate ingress: SIGTERM answers the deliveries in flight, exits 0; every 202 has its run, once', async () => {
    const ingress = start(['ingress', '--port', '0', '--operator-port', '0', '--host', '127.0.0.1'], {
      WAKEGATE_WEBHOOK_SECRET_PINGS: SECRET,
      WAKEGATE_INGRESS_RATE_PER_S: '10000',
      WAKEGATE_INGRESS_BURST: '10000',
    });
    const up = await ingress.ready;
    const url = (up.webhooks as string[])[0]!;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/webhooks\/pings$/);
    assert.match(String(up.operator), /^http:\/\/127\.0\.0\.1:\d+$/);
    const prefix = unique('hook');
    let first!: () => void;
    const firstAnswer = new Promise<void>((r) => (first = r));
    const deliveries = Array.from({ length: 20 }, async (_, i) => {
      const body = JSON.stringify({ entity: `${prefix}-${i}`, occurredAt: '2026-12-02T14:05:00Z', holdMs: 0 });
      const at = new Date();
      const id = `${prefix}-${i}`;
      const headers = {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(SECRET).sign(id, at, body),
      };
      try {
        const res = await fetch(url, { method: 'POST', body, headers });
        first();
        return { status: res.status, json: (await res.json()) as { runKey?: string } };
      } catch (err) {
        return err as Error; // refused once the listener closed: the sender retries, nothing was taken
      }
    });
    await firstAnswer;
    const exit = await ingress.stop('SIGTERM');
    const answers = await Promise.all(deliveries);
    assert.deepEqual(exit, { code: 0, signal: null }, ingress.output());
    const answered = answers.filter((a): a is { status: number; json: { runKey?: string } } => !(a instanceof Error));
    assert.deepEqual(
      answered.filter((a) => a.status !== 202),
      [],
      'an answer other than 202: a delivery the drain cut off',
    );
    assert.ok(answered.length >= 1);
    await completedOnce(answered.map((a) => a.json.runKey!));
    console.log(`ingress drain: ${answered.length} of ${answers.length} deliveries answered 202 (each run once), the rest refused a connection`);
  });

  test('wakegate queue: SIGTERM settles or hands back what it holds, exits 0; the next consumer finishes, each event run once', async () => {
    const queueEnv = { WAKEGATE_REDIS_URL: broker.url, WAKEGATE_QUEUE_CLAIM_IDLE_MS: '1000' };
    let consumer = start(['queue'], queueEnv);
    const up = await consumer.ready;
    assert.deepEqual(up.streams, [streamKey('ping')]);
    assert.ok(!JSON.stringify(up).includes(broker.url), 'the Redis URL with its password is never printed');
    const events = Array.from({ length: 12 }, () => ping(unique('queued'), 0));
    for (const e of events) await publish(redis, e);
    const exit = await consumer.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, consumer.output());
    consumer = start(['queue'], queueEnv);
    await consumer.ready;
    const keys = events.map((e) => gate().key(e).input.runKey);
    await completedOnce(keys);
    await eventually(
      async () => Number(((await redis.xpending(streamKey('ping'), CONSUMER_GROUP)) as [number])[0]),
      (n) => n === 0,
      15_000,
      'every message acknowledged',
    );
    assert.deepEqual(await consumer.stop('SIGINT'), { code: 0, signal: null }, consumer.output());
  });

  test('wakegate worker: SIGINT drains as SIGTERM does', async () => {
    assert.deepEqual(await worker.stop('SIGINT'), { code: 0, signal: null }, worker.output());
  });
});
