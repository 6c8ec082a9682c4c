import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RUN_WATCH_IDLE_MS, RUN_WATCH_WAITING_MS, RunWatch } from '../../workflows/coalescer/watch';
import type { Client } from '@temporalio/client';
import type { RunEnded } from '../../src/core/coalesce-types';
import type { RunResult } from '../../src/core/run-types';
import { runEndOf } from '../../src/core/run-end';
import { runEnd } from '../../activities/coalescer/watch';

/**
 * The coalescer's watch of its live run (workflows/coalescer/watch.ts). A hot coalescer continues as
 * new every 1.5 to 2 s, and each execution builds a new watch: its clock must come from the run's
 * state, or a run terminated by hand after a continue-as-new is never looked at while the storm lasts
 * (found by review: the clock restarted with each execution, and a look was always 10 s away).
 */
function watchOf(looks: string[]) {
  return new RunWatch(
    (runKey) => {
      looks.push(runKey);
      return Promise.resolve<RunEnded | null>(null);
    },
    () => undefined,
    () => undefined,
  );
}
/** The state a continue-as-new carries: plain JSON. */
const carried = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

test('a coalescer continuing as new every 2 s still looks at its live run every RUN_WATCH_WAITING_MS', () => {
  const looks: string[] = [];
  let running = { runKey: 'r1', startedAtMs: 0 } as { runKey: string; startedAtMs: number; lookedAtMs?: number };
  for (let t = 0; t <= 30_000; t += 2000) {
    watchOf(looks).due(running, true, t); // a new execution, a new watch
    running = carried(running);
  }
  assert.deepEqual(looks, ['r1', 'r1', 'r1'], 'at 10 s, 20 s and 30 s');
  assert.equal(running.lookedAtMs, 30_000);
});

test('the next look is due from the last one, and with no live run nothing is due', () => {
  const looks: string[] = [];
  const watch = watchOf(looks);
  const running = { runKey: 'r1', startedAtMs: 1000 };
  assert.equal(watch.due(running, false, 2000), 1000 + RUN_WATCH_IDLE_MS);
  assert.equal(watch.due(running, true, 2000), 1000 + RUN_WATCH_WAITING_MS, 'sooner once a batch waits for it');
  assert.equal(watch.due(running, true, 11_000), 11_000 + RUN_WATCH_WAITING_MS);
  assert.deepEqual(looks, ['r1']);
  assert.equal(watch.due(undefined, true, 12_000), undefined);
});

test('soon: a refused signal or steer sends a look at the next turn, in any execution, for the live run only', () => {
  const looks: string[] = [];
  const running = { runKey: 'r1', startedAtMs: 0, lookedAtMs: 5000 };
  const fresh = watchOf(looks); // just after a continue-as-new
  fresh.soon(running, 'r0'); // an earlier run's refusal changes nothing
  assert.equal(fresh.due(running, false, 6000), 5000 + RUN_WATCH_IDLE_MS);
  fresh.soon(running, 'r1');
  fresh.due(running, false, 6000);
  assert.deepEqual(looks, ['r1']);
});

test('a run this execution started and follows is never looked at, until a refused signal asks; the next execution looks as usual (unless the run was asked to report its end to it)', () => {
  const looks: string[] = [];
  const watch = watchOf(looks);
  const running = { runKey: 'r1', startedAtMs: 0 };
  watch.follow('r1');
  // Its end comes by child.result(), terminated by hand or not: no look, no timer, however long it runs.
  for (let t = 0; t <= 10 * RUN_WATCH_IDLE_MS; t += RUN_WATCH_WAITING_MS) assert.equal(watch.due(running, true, t), undefined);
  assert.deepEqual(looks, []);
  watch.soon(running, 'r1');
  watch.due(running, true, 10 * RUN_WATCH_IDLE_MS);
  assert.deepEqual(looks, ['r1'], 'a refusal says it may be gone: looked at');
  // After a continue-as-new nothing follows it: looked at on the clock carried in its state.
  const next = watchOf(looks);
  assert.equal(next.due(carried(running), false, 10 * RUN_WATCH_IDLE_MS + 1), 10 * RUN_WATCH_IDLE_MS + RUN_WATCH_IDLE_MS);
});

test('the foreign runs (live runs adopted while this chain had its own) are looked at too: sooner while they hold steered events', () => {
  const looks: string[] = [];
  const running = { runKey: 'g', startedAtMs: 0, lookedAtMs: 0 };
  const holding = { runKey: 'f1', startedAtMs: 0, steered: ['ev-b'] };
  const bare = { runKey: 'f2', startedAtMs: 0 };
  const watch = watchOf(looks);
  watch.follow('g'); // this execution's own run: its end comes by child.result()
  assert.equal(watch.due(running, false, 1000, [holding, bare]), RUN_WATCH_WAITING_MS);
  assert.equal(watch.due(running, false, RUN_WATCH_WAITING_MS, [holding, bare]), 2 * RUN_WATCH_WAITING_MS);
  assert.deepEqual(looks, ['f1'], 'one holding a steered event: every RUN_WATCH_WAITING_MS');
  assert.equal(watch.due(undefined, false, RUN_WATCH_IDLE_MS, [carried(holding), bare]), RUN_WATCH_IDLE_MS + RUN_WATCH_WAITING_MS, 'with no live run too');
  assert.deepEqual(looks, ['f1', 'f1', 'f2'], 'one holding none: every RUN_WATCH_IDLE_MS');
});

test('the watch reports a closed run’s end with the facts its result gives child.result(): seen, unseen steered events in full, commitBegan', async () => {
  const unseen = { eventKey: 'ev-c', source: 'ping', type: 'c', entity: 'e', occurredAt: '2026-12-02T10:00:00Z', deliveryIds: ['d-c'], payload: { c: 1 } };
  const result = { runKey: 'r1', terminalReason: 'budget_exhausted', steered: ['ev-b'], unseenEvents: [unseen], commitBegan: true } as unknown as RunResult;
  const client = {
    workflow: { getHandle: () => ({ describe: () => Promise.resolve({ status: { name: 'COMPLETED' } }), result: () => Promise.resolve(result) }) },
  } as unknown as Client;
  const end = await runEnd(client, 'r1');
  assert.deepEqual(end, runEndOf('r1', result));
  assert.deepEqual(end, { runKey: 'r1', terminalReason: 'budget_exhausted', seen: ['ev-b'], unseenEvents: [unseen], commitBegan: true });
});
