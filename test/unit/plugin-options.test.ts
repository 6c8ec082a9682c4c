import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkerOptions } from '@temporalio/worker';
import { DEFAULT_WORKFLOW_CACHE, WakegatePlugin } from '../../src/runtime/plugin';

/*
 * What the plugin adds to a worker's options, with no server: the worker wakegate builds itself
 * (createWakeWorker) and a team's own worker get their wakegate part from this one place.
 */
const activities = { wakegateActivity: async () => 'ok' };
const plugin = () => new WakegatePlugin(() => activities);

test("a team's worker: wakegate's activities beside its own, wakegate's workflows beside its own, steps' heartbeats sent every second", () => {
  const shout = async (s: string) => s.toUpperCase();
  const own = require.resolve('../fixtures/own-workflows');
  const o = plugin().configureWorker({ taskQueue: 'q', activities: { shout }, workflowsPath: own } as WorkerOptions);
  assert.deepEqual(Object.keys(o.activities ?? {}).sort(), ['shout', 'wakegateActivity']);
  assert.notEqual(o.workflowsPath, own, 'a composed entry that re-exports both');
  assert.equal(o.workflowBundle, undefined);
  // A kill reaches a running step within about a second only when every heartbeat is sent.
  assert.equal(o.maxHeartbeatThrottleInterval, '1 second');
  // Memory bounded by the cache, not by the number of wake keys (each leaves an idle coalescer open).
  assert.equal(o.maxCachedWorkflows, DEFAULT_WORKFLOW_CACHE);
});

test('a throttle and a cache bound the team set are kept', () => {
  const o = plugin().configureWorker({ taskQueue: 'q', maxHeartbeatThrottleInterval: '5 seconds', maxCachedWorkflows: 40 } as WorkerOptions);
  assert.equal(o.maxHeartbeatThrottleInterval, '5 seconds');
  assert.equal(o.maxCachedWorkflows, 40);
});

test('a worker given a built bundle is left to it: no workflows path, no interceptor modules to bundle (nothing for the SDK to warn of)', () => {
  const workflowBundle = { code: '/* a bundle with wakegate’s workflows in it */' };
  const o = plugin().configureWorker({ taskQueue: 'q', workflowBundle } as WorkerOptions);
  assert.equal(o.workflowBundle, workflowBundle);
  assert.equal(o.workflowsPath, undefined);
  assert.deepEqual(o.interceptors?.workflowModules ?? [], []);
  assert.deepEqual(Object.keys(o.activities ?? {}), ['wakegateActivity']);
});
