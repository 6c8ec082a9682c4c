import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Gate } from '../../src/gate/gate';
import type { RunResult } from '../../src/core/run-types';
import { coalescing } from '../helpers/agents';
import { assertClockFree, startTimeSkippingEnv, unique, withTimeSkippingWorker } from '../helpers/env';
import { registryOf } from '../helpers/app';

// Debounce and maxWait at their real sizes (minutes, an hour) on the Java time-skipping server:
// the coalescer's timers are what move, the test skips the time between them.
let env: TestWorkflowEnvironment;
/** A plain client: unlike env.client, waiting on it never lets the server skip time, so only env.sleep moves the clock. */
let client: Client;
before(async () => {
  env = await startTimeSkippingEnv();
  client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
});
// Each test leaves nothing behind that would hold the server's clock for the next one.
afterEach(() => assertClockFree(env));
after(async () => {
  await env?.teardown();
});

const MIN = 60_000;
const IDLE_CLOSE_MS = MIN;
const agents = coalescing('canary', { debouncePeriodMs: 10 * MIN, maxWaitMs: 60 * MIN, idleCloseMs: IDLE_CLOSE_MS });
const ping = (entity: string, type: string) => ({ source: 'ping', entity, type, occurredAt: '2026-12-02T10:00:00Z', payload: {} });

/** Whether the run exists yet (a pending batch has no workflow). */
const started = (id: string) =>
  client.workflow
    .getHandle(id)
    .describe()
    .then(
      () => true,
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );

/**
 * End a test with nothing of its own left to run, while its worker still polls: the gate's counts
 * are sent now (a late batch would start work for a worker that is gone), and the coalescer, idle
 * after its run, is waited out until it closes: the clock is moved by exactly its idle-close time
 * (env.sleep), never by an open-ended wait on env.client, which would let the server skip on to the
 * next timer of all, the 10-year run timeout of the supervisor, and time it out in mid-task.
 */
async function quiesce(gate: Gate, coalescerId: string): Promise<void> {
  await gate.close();
  await env.sleep(IDLE_CLOSE_MS + 1000);
  await client.workflow.getHandle(coalescerId).result();
}

test('debounce: each wake pushes the start back by the period; a quiet period starts the run with every wake', async () => {
  const taskQueue = unique('debounce');
  const gate = new Gate({ client, taskQueue, registry: registryOf(agents), decisionWaitMs: 60_000 });
  const entity = unique('quiet');
  await withTimeSkippingWorker(env, taskQueue, async () => {
    const a = await gate.admit(ping(entity, 'a'));
    assert.equal(a.decision, 'started');
    assert.ok(a.startsInMs! > 9 * MIN && a.startsInMs! <= 10 * MIN, `starts in ${a.startsInMs} ms`);
    await env.sleep(5 * MIN);
    const b = await gate.admit(ping(entity, 'b'));
    assert.equal(b.decision, 'coalesced');
    assert.ok(b.startsInMs! > 9 * MIN, 'the second wake pushed the start back by a full period');
    await env.sleep(8 * MIN); // 13 min after the first wake, 8 after the last: still quiet-waiting
    assert.equal(await started(a.runKey), false);
    await env.sleep(3 * MIN); // 11 min after the last wake
    const result = (await client.workflow.getHandle(a.runKey).result()) as RunResult;
    assert.deepEqual(
      result.absorbed!.map((e) => e.type),
      ['a', 'b'],
    );
    await quiesce(gate, a.coalescerId!);
  });
});

test('maxWait: wakes that never go quiet still start a run no later than maxWait after the first', async () => {
  const taskQueue = unique('maxwait');
  const gate = new Gate({ client, taskQueue, registry: registryOf(agents), decisionWaitMs: 60_000 });
  const entity = unique('busy');
  await withTimeSkippingWorker(env, taskQueue, async () => {
    const t0 = await env.currentTimeMs();
    const first = await gate.admit(ping(entity, 'w0'));
    let startedAt: number | undefined;
    for (let i = 1; i <= 10 && startedAt === undefined; i++) {
      await env.sleep(8 * MIN); // a wake every 8 minutes: never 10 quiet minutes
      if (await started(first.runKey)) startedAt = await env.currentTimeMs();
      else await gate.admit(ping(entity, `w${i}`));
    }
    assert.ok(startedAt !== undefined, 'the run started');
    assert.ok(startedAt! - t0 <= 60 * MIN + 8 * MIN, `started ${(startedAt! - t0) / MIN} min after the first wake`);
    assert.ok(startedAt! - t0 >= 56 * MIN, 'not before maxWait (the debounce never went quiet)');
    const result = (await client.workflow.getHandle(first.runKey).result()) as RunResult;
    assert.equal(result.absorbed!.length, 8, 'the wakes of the first hour');
    await quiesce(gate, first.coalescerId!);
  });
});
