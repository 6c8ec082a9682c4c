import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isInFlightRefusal } from '../../src/core/failures';
import { PermitStock } from '../../src/supervisor/permit-stock';

/*
 * A worker process's local stock of permits (src/supervisor/permit-stock.ts), on its own clock given
 * call by call: what a run takes with no Temporal call, what the next lease asks for ahead of
 * demand, and what goes back to the supervisor.
 */

const stock = () => new PermitStock({ demandWindowMs: 2000, maxPrefetch: 64 });

test('a run takes a permit from a live block, oldest first; none from another agent, none past its expiry', () => {
  const s = stock();
  assert.equal(s.take('canary', 0), false, 'an empty stock');
  s.add('canary', 2, 1000, 0, 2000);
  s.add('canary', 1, 1500, 500, 2000);
  assert.equal(s.take('deps', 10), false);
  assert.equal(s.size('canary', 10), 3);
  assert.equal(s.take('canary', 10), true);
  assert.equal(s.take('canary', 10), true);
  // The first block is used up; the second is live until 2500.
  assert.deepEqual(s.expired(2000), [], 'a used-up block goes without a return');
  assert.equal(s.take('canary', 2500), false, 'the second block expired at 2500');
  assert.deepEqual(s.expired(2500), [{ agent: 'canary', atMs: 1500, n: 1 }], 'what is left at expiry is handed back, named by its lease time');
  assert.equal(s.nextExpiryMs(), undefined);
});

test('the prefetch follows recent demand, less the runs waiting and the stock, at most maxPrefetch; a burst at its rate so far', () => {
  const s = stock();
  s.noteDemand('canary', 0);
  assert.equal(s.prefetchFor('canary', 1, 0), 0, 'a lone run asks for itself only: nothing to hand back later');
  // A stream over the whole window (a run every 100 ms for 2 s): its demand as it is.
  for (let t = 100; t <= 2000; t += 100) s.noteDemand('canary', t);
  assert.equal(s.prefetchFor('canary', 5, 2000), 16, '21 asked lately, 5 of them waiting');
  s.add('canary', 6, 2000, 2000, 2000);
  assert.equal(s.prefetchFor('canary', 5, 2000), 10, 'what is in stock counts');
  for (let i = 0; i < 200; i++) s.noteDemand('canary', 2100);
  assert.equal(s.prefetchFor('canary', 1, 2100), 64, 'at most maxPrefetch');
  assert.equal(s.prefetchFor('canary', 0, 9000), 0, 'demand older than the window is forgotten');
  assert.equal(s.prefetchFor('deps', 1, 2100), 0, 'demand is per agent');
  // A burst that began a moment ago: its rate (over at least a second) for a whole window.
  const b = stock();
  for (let i = 0; i <= 30; i++) b.noteDemand('canary', i * 10);
  assert.equal(b.prefetchFor('canary', 5, 300), 57, '31 in 300 ms: taken as 31 a second, 62 a window, 5 of them waiting');
  const two = stock();
  two.noteDemand('canary', 0);
  two.noteDemand('canary', 1000);
  assert.equal(two.prefetchFor('canary', 1, 1000), 3, 'two runs a second apart: 4 a window, one waiting');
});

test('a halt or a close drains every block: what is left goes back, per block', () => {
  const s = stock();
  s.add('canary', 3, 100, 0, 2000);
  s.add('deps', 2, 100, 0, 2000);
  s.take('canary', 10);
  assert.deepEqual(s.drain(), [
    { agent: 'canary', atMs: 100, n: 2 },
    { agent: 'deps', atMs: 100, n: 2 },
  ]);
  assert.equal(s.take('canary', 20), false);
  assert.deepEqual(s.drain(), []);
});

test("Temporal's refusal for its 10 in-flight updates is told from other failures, however deep its cause", () => {
  const grpc = Object.assign(new Error('8 RESOURCE_EXHAUSTED: limit on number of concurrent in-flight updates has been reached (10)'), { code: 8 });
  assert.equal(isInFlightRefusal(new Error('Unexpected error while making gRPC request', { cause: grpc })), true);
  assert.equal(isInFlightRefusal(Object.assign(new Error('x'), { details: 'limit on number of concurrent in-flight updates has been reached (10)' })), true);
  assert.equal(isInFlightRefusal(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded')), false);
  assert.equal(isInFlightRefusal(undefined), false);
});
