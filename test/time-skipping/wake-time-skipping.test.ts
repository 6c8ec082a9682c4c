import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { keyEvent } from '../../src/gate/gate';
import { deliverySignal, statusQuery } from '../../src/core/messages';
import type { RunResult } from '../../src/core/run-types';
import { assertClockFree, eventually, startTimeSkippingEnv, unique, withTimeSkippingWorker } from '../helpers/env';
import { registryOf, activitiesOf } from '../helpers/app';

// The Java SDK's time-skipping server, from the installed wheel: the wake workflow's own logic
// (delivery bookkeeping, status, cancellation) on a second real server implementation.
let env: TestWorkflowEnvironment;
before(async () => {
  env = await startTimeSkippingEnv(); // registers wakegate's search attributes
});
// Each test leaves nothing behind that would hold the server's clock for the next one.
afterEach(() => assertClockFree(env));
after(async () => {
  await env?.teardown();
});

const input = (entity: string, payload: Record<string, unknown>) =>
  keyEvent(registryOf(), { source: 'ping', entity, type: 'check', occurredAt: '2026-12-02T14:05:00Z', payload, deliveryId: 'first' }).input;

test('a wake records redeliveries, answers status, and ends with its terminal reason', async () => {
  const taskQueue = unique('ts-wake');
  const wake = input(unique('e'), { holdMs: 2000 });
  await withTimeSkippingWorker(env, taskQueue, async () => {
    const handle = await env.client.workflow.start('runWorkflow', { workflowId: wake.eventKey, taskQueue, args: [wake] });
    await eventually(
      () => handle.query(statusQuery),
      (s) => s.phase === 'hold',
      15_000,
      'the hold',
    );
    await handle.signal(deliverySignal, { deliveryIds: ['second'] });
    await handle.signal(deliverySignal, { deliveryIds: ['second', 'third'] }); // a delivery seen twice is listed once
    const status = await handle.query(statusQuery);
    assert.deepEqual(status.deliveryIds, ['first', 'second', 'third']);
    assert.equal(status.deliveryCount, 4);
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'success');
    assert.deepEqual(result.deliveryIds, ['first', 'second', 'third']);
    assert.equal((result.output as { steps: { step: string; heldMs?: number }[] }).steps.find((s) => s.step === 'hold')?.heldMs, 2000);
  });
});

test('cancelling a wake during its hold cancels the activity and ends `cancelled`', async () => {
  const taskQueue = unique('ts-cancel');
  const wake = input(unique('e'), { holdMs: 600_000 });
  await withTimeSkippingWorker(env, taskQueue, async () => {
    const handle = await env.client.workflow.start('runWorkflow', { workflowId: wake.eventKey, taskQueue, args: [wake] });
    await eventually(
      () => handle.query(statusQuery),
      (s) => s.phase === 'hold',
      15_000,
      'the hold',
    );
    await handle.cancel();
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'cancelled');
  });
});

test('an unknown agent fails the run with a non-retryable error that names it', async () => {
  const taskQueue = unique('ts-unknown');
  const wake = { ...input(unique('e'), {}), agent: 'nobody' };
  await withTimeSkippingWorker(env, taskQueue, async () => {
    const handle = await env.client.workflow.start('runWorkflow', { workflowId: wake.eventKey, taskQueue, args: [wake] });
    await assert.rejects(handle.result(), (e: Error & { cause?: Error }) => /no agent named "nobody"/.test(e.cause?.message ?? ''));
  });
});

test('a held run whose re-check cannot reach the supervisor stays held and asks again; it runs once it gets an answer', async () => {
  const taskQueue = unique('ts-held');
  const wake = input(unique('e'), {});
  const real = activitiesOf();
  let rechecks = 0;
  const FAILED_RECHECKS = 12; // two whole re-check activities (five attempts each) and two attempts of a third
  const activities = {
    ...real,
    // The first step says hold, as a halted supervisor would.
    prepareRun: async (req: Parameters<typeof real.prepareRun>[0]) => ({
      ...(await real.prepareRun(req)),
      verdict: { kind: 'hold' as const, hold: 'halted' as const, reason: 'test: halted', recheckMs: 1000 },
    }),
    recheckHold: async () => {
      rechecks += 1;
      if (rechecks <= FAILED_RECHECKS) throw new Error('the supervisor cannot be reached (test)');
      return { kind: 'run' as const, releasedBy: { who: 'test', reason: 'the supervisor answers again' } };
    },
  };
  await withTimeSkippingWorker(
    env,
    taskQueue,
    async () => {
      const handle = await env.client.workflow.start('runWorkflow', { workflowId: wake.eventKey, taskQueue, args: [wake] });
      const result = (await handle.result()) as RunResult;
      assert.equal(result.terminalReason, 'success', 'never failed for a supervisor it could not reach');
      assert.equal(result.held?.hold, 'halted');
      assert.deepEqual(result.held?.releasedBy, { who: 'test', reason: 'the supervisor answers again' });
      assert.equal(rechecks, FAILED_RECHECKS + 1);
      const failedRechecks = ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskFailedEventAttributes).length;
      assert.equal(failedRechecks, 2, 'two re-checks failed for good, and the run stayed held through both');
    },
    { activities },
  );
});
