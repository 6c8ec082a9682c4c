import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LastSeen } from '../../src/coalescer/last-seen';

/** The gate's memory of coalescers seen open and of those that answered lately: bounded, least recently seen forgotten first. */
test('past its bound the least recently seen is forgotten; seeing one again makes it the most recent', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const seen = new LastSeen(3);
  for (const id of ['a', 'b', 'c']) seen.note(id);
  seen.note('a'); // a is now the most recent: b is the oldest
  seen.note('d');
  assert.equal(seen.size, 3);
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((id) => seen.within(id, 60_000)),
    [true, false, true, true],
  );
  t.mock.timers.tick(60_000);
  assert.equal(seen.within('a', 60_000), false, 'seen, but not within the window');
  assert.equal(seen.within('a', 60_001), true);
});

test('those seen within keepWithinMs are kept past the bound, and go once they are older', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const seen = new LastSeen(2, 5_000);
  for (const id of ['a', 'b', 'c', 'd']) seen.note(id);
  assert.equal(seen.size, 4, 'all four seen within 5 s: none forgotten');
  t.mock.timers.tick(5_000);
  seen.note('e');
  assert.equal(seen.size, 2, 'the old ones go down to the bound');
  assert.deepEqual(
    ['a', 'b', 'c', 'd', 'e'].map((id) => seen.within(id, 60_000)),
    [false, false, false, true, true],
  );
});
