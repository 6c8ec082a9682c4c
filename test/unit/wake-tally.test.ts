import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BRISK_SHARE, QUIET_FLUSH_MS, WakeTally, startsRun } from '../../src/supervisor/wake-tally';
import type { Decision } from '../../src/core/decision';

const storm = { fleetPerMinute: 600, agentPerMinute: 300, rationale: 'test' };
const T0 = Date.parse('2026-12-07T10:00:00Z');

test('wake counts wait ten seconds while a process is quiet, a quarter second once wakes come briskly', () => {
  const tally = new WakeTally({ storm, flushMs: 250 });
  tally.note('canary', T0);
  assert.equal(tally.delayMs(T0), QUIET_FLUSH_MS, 'one wake: counts may wait');
  // A twentieth of the fleet threshold in a minute (30), spread over three agents under their own twentieth (15).
  for (let i = 1; i < 600 * BRISK_SHARE; i++) tally.note(['a', 'b', 'c'][i % 3]!, T0 + i * 1000);
  assert.equal(tally.delayMs(T0 + 29_000), 250, 'the fleet brisk: at once');
  assert.equal(tally.delayMs(T0 + 60_500), QUIET_FLUSH_MS, 'a minute on, the first ones have slid out');
});

test('one agent at a twentieth of its own threshold is brisk; without an agent threshold only the fleet counts', () => {
  const tally = new WakeTally({ storm, flushMs: 250 });
  for (let i = 0; i < 300 * BRISK_SHARE; i++) tally.note('loop', T0 + i);
  assert.equal(tally.delayMs(T0 + 100), 250);
  const fleetOnly = new WakeTally({ storm: { fleetPerMinute: 600, rationale: 'test' }, flushMs: 250 });
  for (let i = 0; i < 300 * BRISK_SHARE; i++) fleetOnly.note('loop', T0 + i);
  assert.equal(fleetOnly.delayMs(T0 + 100), QUIET_FLUSH_MS);
});

test('a tiny threshold makes every wake brisk; a flush period over ten seconds is kept', () => {
  const tiny = new WakeTally({ storm: { fleetPerMinute: 3, rationale: 'test' }, flushMs: 250 });
  tiny.note('canary', T0);
  assert.equal(tiny.delayMs(T0), 250);
  const slow = new WakeTally({ storm, flushMs: 30_000 });
  slow.note('canary', T0);
  assert.equal(slow.delayMs(T0), 30_000);
});

test('only a wake that starts a run, or may yet, counts toward the storm breaker', () => {
  const all: Decision[] = ['started', 'coalesced', 'skipped', 'steered', 'in_progress', 'completed', 'stale', 'accepted', 'mismatch', 'held', 'refused'];
  assert.deepEqual(
    all.filter((d) => startsRun(d)),
    ['started', 'accepted', 'held'],
  );
});
