import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { recordedHistory } from '../../src/trail/history-read';

/**
 * The trail names a never-taken coalescer's first batch by the chain's first run, as the workflow
 * does (`firstExecutionRunId`), not by the run it reads: a run reset by hand has an ID of its own
 * and keeps the chain's. The start event carries it.
 */
test("a history's start records the chain's first run, which a reset run keeps", async () => {
  const history = {
    events: [{ workflowExecutionStartedEventAttributes: { firstExecutionRunId: 'first-run', originalExecutionRunId: 'reset-run' } }],
  };
  const recorded = await recordedHistory({} as Client, history);
  assert.deepEqual(recorded, [{ kind: 'started', at: '', input: undefined, firstRunId: 'first-run' }]);
});
