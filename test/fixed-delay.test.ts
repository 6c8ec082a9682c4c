import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { cadenceQuery } from '../workflows/schedule-messages';
import type { FixedDelayInput, FixedDelayState } from '../workflows/schedule-types';
import { temporal } from '@temporalio/proto';
import { SearchAttributeType } from '@temporalio/common';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { startTimeSkippingEnv, unique, withWorker } from './helpers/env';

const T = temporal.api.enums.v1.IndexedValueType;
const INDEXED: Record<SearchAttributeType, temporal.api.enums.v1.IndexedValueType> = {
  [SearchAttributeType.TEXT]: T.INDEXED_VALUE_TYPE_TEXT,
  [SearchAttributeType.KEYWORD]: T.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.INT]: T.INDEXED_VALUE_TYPE_INT,
  [SearchAttributeType.DOUBLE]: T.INDEXED_VALUE_TYPE_DOUBLE,
  [SearchAttributeType.BOOL]: T.INDEXED_VALUE_TYPE_BOOL,
  [SearchAttributeType.DATETIME]: T.INDEXED_VALUE_TYPE_DATETIME,
  [SearchAttributeType.KEYWORD_LIST]: T.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

// Timers of an hour in seconds of real time: the time-skipping test server.
let env: TestWorkflowEnvironment;
before(async () => {
  env = await startTimeSkippingEnv();
  // The test server has no --search-attribute flag: register the wake's attributes through its operator service.
  await env.connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(ALL_SEARCH_ATTRIBUTES.map((k) => [k.name, INDEXED[k.type]])),
  });
});
after(async () => {
  await env?.teardown();
});

describe('fixed-delay cadence (time-skipping server)', () => {
  test('the next run starts `delay` after the previous one ends: never overlaps, and the drift is visible', async () => {
    const taskQueue = unique('fixed-delay');
    const scheduleId = unique('fd');
    const HOLD_MS = 1500;
    const DELAY_MS = 3_600_000;
    const input: FixedDelayInput = { scheduleId, payload: { holdMs: HOLD_MS }, delayMs: DELAY_MS, maxRuns: 3 };
    const state = await withWorker(env.nativeConnection, taskQueue, async () => {
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
    const wakeOf = (ms: number) => env.client.workflow.getHandle(`schedule/tick/${scheduleId}/${new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')}`);
    for (const ms of [state.firstStartMs!, state.lastStartMs!]) assert.equal((await wakeOf(ms).describe()).status.name, 'COMPLETED');
    assert.ok(state.lastStartMs! - state.firstStartMs! >= 2 * (DELAY_MS + HOLD_MS));
  });
});
