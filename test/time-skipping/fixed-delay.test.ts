import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { cadenceQuery } from '../../src/core/schedule-messages';
import { scheduleWindowRunKey } from '../../src/core/ids';
import { isoSeconds } from '../../src/core/time';
import { statusQuery } from '../../src/core/messages';
import type { FixedDelayInput, FixedDelayState } from '../../src/core/schedule-types';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { assertClockFree, eventually, startTimeSkippingEnv, unique, withTimeSkippingWorker } from '../helpers/env';

// Timers of an hour in seconds of real time: the time-skipping test server.
let env: TestWorkflowEnvironment;
before(async () => {
  env = await startTimeSkippingEnv(); // registers wakegate's search attributes
});
// Each test leaves nothing behind that would hold the server's clock for the next one.
afterEach(() => assertClockFree(env));
after(async () => {
  await env?.teardown();
});

describe('fixed-delay cadence (time-skipping server)', () => {
  test('the next run starts `delay` after the previous one ends: never overlaps, and the drift is visible', async () => {
    const taskQueue = unique('fixed-delay');
    const scheduleId = unique('fd');
    const HOLD_MS = 1500;
    const DELAY_MS = 3_600_000;
    const input: FixedDelayInput = { scheduleId, agent: 'canary', payload: { holdMs: HOLD_MS }, delayMs: DELAY_MS, maxRuns: 3 };
    const state = await withTimeSkippingWorker(env, taskQueue, async () => {
      const handle = await env.client.workflow.start('fixedDelayWorkflow', { workflowId: `wakegate-delay/${scheduleId}`, taskQueue, args: [input] });
      const done = (await handle.result()) as FixedDelayState;
      const q = await handle.query(cadenceQuery);
      assert.equal(q.runs, 3);
      return done;
    });
    assert.equal(state.runs, 3);
    // Each period is the run (the canary holds HOLD_MS) plus the full delay: the runs cannot overlap.
    assert.ok(state.lastPeriodMs! >= DELAY_MS + HOLD_MS, `period ${state.lastPeriodMs}`);
    // Behind a fixed-rate grid of DELAY_MS by at least the two earlier runs' durations.
    assert.ok(state.driftMs >= 2 * HOLD_MS, `drift ${state.driftMs}`);
    assert.ok(state.driftMs < 2 * HOLD_MS + 60_000, `drift ${state.driftMs}`);
    assert.equal(state.lastTerminalReason, 'success');
    // Each run passed the gate under its own window: the first and the last start are distinct wakes, both completed.
    const wakeOf = (ms: number) => env.client.workflow.getHandle(scheduleWindowRunKey('canary', scheduleId, isoSeconds(ms)));
    for (const ms of [state.firstStartMs!, state.lastStartMs!]) assert.equal((await wakeOf(ms).describe()).status.name, 'COMPLETED');
    assert.ok(state.lastStartMs! - state.firstStartMs! >= 2 * (DELAY_MS + HOLD_MS));
  });
});

describe('fixed-delay cancellation (time-skipping server)', () => {
  test('cancelling the loop mid-window records `cancelled` (not `failed`), cancels the wake and ends the loop cancelled', async () => {
    const taskQueue = unique('fixed-delay-cancel');
    const scheduleId = unique('fdc');
    // maxRuns 1: before the fix, the swallowed cancellation counted as a failed run and the loop completed.
    const input: FixedDelayInput = { scheduleId, agent: 'canary', payload: { holdMs: 120_000 }, delayMs: 3_600_000, maxRuns: 1 };
    await withTimeSkippingWorker(env, taskQueue, async () => {
      const handle = await env.client.workflow.start('fixedDelayWorkflow', { workflowId: `wakegate-delay/${scheduleId}`, taskQueue, args: [input] });
      const running = await eventually(
        () => handle.query(cadenceQuery),
        (q) => q.phase === 'running' && q.lastStartMs !== undefined,
        30_000,
        'a window in flight',
      );
      const wake = env.client.workflow.getHandle(scheduleWindowRunKey('canary', scheduleId, isoSeconds(running.lastStartMs!)));
      // The loop is `running` from just before its activity starts the wake: until then there is none.
      const wakeStatus = () => wake.query(statusQuery).catch((err: unknown) => (err instanceof WorkflowNotFoundError ? undefined : Promise.reject(err)));
      await eventually(wakeStatus, (s?: RunStatus) => s?.phase === 'hold', 30_000, 'the wake holding');
      await handle.cancel();
      await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure);
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
      const q = await handle.query(cadenceQuery);
      assert.equal(q.lastTerminalReason, 'cancelled');
      assert.equal(q.runs, 0, 'a cancelled window is not counted as a run');
      const woke = (await wake.result()) as RunResult;
      assert.equal(woke.terminalReason, 'cancelled');
    });
  });
});
