import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Gate } from '../gate/gate';
import { awaitRun } from '../gate/await-run';
import { coalescing } from './helpers/agents';
import { startDevEnv, unique, withWorker, type DevEnv } from './helpers/env';
import { spawnWorker, type WorkerProcess } from './helpers/worker-process';
import { registryOf } from './helpers/app';

/*
 * The coalescing path across restarts: a worker process SIGKILLed while a batch is pending, and the
 * dev server stopped and restarted on its SQLite file. The coalescing policy travels with each
 * offer from the gate (this process), so the worker processes run the built-in agents unchanged.
 */
let env: DevEnv;
const workers: WorkerProcess[] = [];
before(async () => {
  env = await startDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-coalesce-restart-')), 'dev.db') });
});
after(async () => {
  for (const w of workers) await w.kill();
  await env?.teardown();
});

const agents = coalescing('canary', { debouncePeriodMs: 2500, maxWaitMs: 10_000 });
const gateFor = (taskQueue: string) => new Gate({ client: env.client, taskQueue, registry: registryOf(agents), decisionWaitMs: 20_000 });
const ping = (entity: string, type: string, deliveryId: string) => ({
  source: 'ping',
  entity,
  type,
  occurredAt: '2026-12-02T10:00:00Z',
  payload: {},
  deliveryId,
});

test('a worker killed while a batch is pending: the next worker runs it once, with every event', async () => {
  const taskQueue = unique('coalesce-crash');
  const entity = unique('pending');
  const spawn = async () => {
    const w = spawnWorker({ TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue });
    workers.push(w);
    await w.ready;
    return w;
  };
  const first = await spawn();
  const gate = gateFor(taskQueue);
  const a = await gate.admit(ping(entity, 'one', 'd1'));
  const b = await gate.admit(ping(entity, 'two', 'd2'));
  assert.deepEqual([a.decision, b.decision], ['started', 'coalesced']);
  await first.kill(); // inside the debounce: the batch is only in the coalescer's history
  await spawn();
  const result = await awaitRun(env.client, a);
  assert.equal(result.terminalReason, 'success');
  assert.deepEqual(
    result.absorbed!.map((e) => e.type),
    ['one', 'two'],
  );
  assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`)).count, 1);
  const again = await gate.admit(ping(entity, 'two', 'd2-again'));
  assert.equal(again.decision, 'completed');
  assert.deepEqual(again.result, result);
  await gate.close();
});

test('the dev server restarted: a pending batch still runs once, and redeliveries get the same run’s answer', async () => {
  const taskQueue = unique('coalesce-restart');
  const entity = unique('restart');
  const [a, b] = await withWorker(env.nativeConnection, taskQueue, async () => {
    const gate = gateFor(taskQueue);
    const admitted = [await gate.admit(ping(entity, 'one', 'r1')), await gate.admit(ping(entity, 'two', 'r2'))];
    await gate.close(); // nothing of it left on the connection the restart closes
    return admitted;
  });
  assert.deepEqual([a!.decision, b!.decision], ['started', 'coalesced']);

  await env.server.stop(); // inside the debounce, with no worker: the timer is in the server's database
  await env.server.up();
  await env.reconnect();
  const result = await withWorker(env.nativeConnection, taskQueue, () => awaitRun(env.client, a!));
  assert.equal(result.terminalReason, 'success');
  assert.deepEqual(
    result.absorbed!.map((e) => e.type),
    ['one', 'two'],
  );

  await env.server.stop();
  await env.server.up();
  await env.reconnect();
  // No worker polls: the coalescer cannot answer, so the redelivery is taken by signal and answered `accepted`.
  const quick = new Gate({ client: env.client, taskQueue, registry: registryOf(agents), decisionWaitMs: 1000 });
  assert.equal((await quick.admit(ping(entity, 'one', 'r1-unanswered'))).decision, 'accepted');
  await quick.close();
  await withWorker(env.nativeConnection, taskQueue, async () => {
    const gate = gateFor(taskQueue);
    for (const [type, deliveryId] of [
      ['one', 'r1-again'],
      ['two', 'r2-again'],
    ] as const) {
      const again = await gate.admit(ping(entity, type, deliveryId));
      assert.equal(again.decision, 'completed');
      assert.deepEqual(again.result, result);
    }
    await gate.close();
  });
  assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`)).count, 1);
});
