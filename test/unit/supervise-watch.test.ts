import { test } from 'node:test';
import assert from 'node:assert/strict';
import { watchCut } from '../../src/core/supervisor-watch';
import type { RunClosure, WatchRequest } from '../../src/core/supervisor-types';

/*
 * When a watch of closed runs (activities/supervisor/supervise.ts) comes back before its burst is
 * over: src/core/supervisor-watch.ts, the pure rule it applies after every read.
 */

const base: WatchRequest = { everyMs: 5000, quietMs: 15_000, activeMs: 60_000, maxMs: 120_000, quietUntilMs: 0 };
const run = (agent: string, reason: string, spend: Partial<RunClosure> = {}): RunClosure => ({ agent, reason, closeMs: 0, costUsd: 0, tokens: 0, ...spend });

test('a failed run cuts the watch once enough runs are read that the error rate could trip; successes, a live shadow and a halted breaker never do', () => {
  const w: WatchRequest = { ...base, trip: { reasons: ['failed', 'escalated'], runsToTrip: 3 } };
  assert.equal(watchCut(w, [run('a', 'success'), run('a', 'success'), run('a', 'success')]), undefined, 'no failure');
  assert.equal(watchCut(w, [run('a', 'failed'), run('a', 'success')]), undefined, 'two runs of the three the breaker could judge');
  assert.equal(watchCut(w, [run('a', 'failed'), run('a', 'success'), run('a', 'success')]), 'failure');
  assert.equal(watchCut(w, [run('a', 'success'), run('a', 'success'), run('a', 'escalated')]), 'failure');
  assert.equal(watchCut(w, [run('a/shadow', 'failed'), run('a', 'success'), run('a', 'success')]), undefined, "a live shadow's outcome is not production's");
  assert.equal(watchCut({ ...w, trip: { reasons: ['failed'], runsToTrip: 0 } }, [run('a', 'failed')]), 'failure', 'enough runs in the window already');
  assert.equal(watchCut(base, [run('a', 'failed'), run('a', 'failed'), run('a', 'failed')]), undefined, 'no `trip`: the breaker does not watch');
});

test("spend cuts the watch once it reaches a cap's room left, per cap: the fleet's, the agent's, the live shadows'", () => {
  const caps = {
    fleet: [{ windowMs: 60_000, costUsd: 1, rationale: 't' }],
    agents: { a: [{ windowMs: 60_000, tokens: 100, rationale: 't' }] },
    shadow: [{ windowMs: 60_000, costUsd: 0.5, rationale: 't' }],
  };
  const w: WatchRequest = { ...base, spend: { caps, rooms: { 'usd:*:60000': 0.6, 'tokens:a:60000': 50, 'usd:~shadow:60000': 0.1 } } };
  assert.equal(
    watchCut(w, [run('a', 'success', { costUsd: 0.3, tokens: 20 }), run('b', 'success', { costUsd: 0.2, tokens: 500 })]),
    undefined,
    'under every room',
  );
  assert.equal(watchCut(w, [run('a', 'success', { costUsd: 0.3 }), run('b', 'success', { costUsd: 0.3 })]), 'spend', "the fleet's room reached");
  assert.equal(watchCut(w, [run('a', 'success', { tokens: 30 }), run('a', 'success', { tokens: 20 })]), 'spend', "the agent's tokens reached");
  assert.equal(watchCut(w, [run('b', 'success', { tokens: 1000 })]), undefined, 'no token cap applies to b');
  assert.equal(watchCut(w, [run('a/shadow', 'success', { costUsd: 0.1 })]), 'spend', "a live shadow's spend against the shadow caps");
  assert.equal(watchCut({ ...w, spend: { caps, rooms: {} } }, [run('a', 'success', { costUsd: 5 })]), undefined, 'a full cap (no room given) holds already');
});
