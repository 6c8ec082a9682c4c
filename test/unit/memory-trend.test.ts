import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FLAT_MB_PER_HOUR, rssTrend } from '../../tools/bench/memory-trend';

const line = (seconds: number, every: number, at: (s: number) => number) =>
  Array.from({ length: Math.floor(seconds / every) + 1 }, (_, i) => ({ s: i * every, mb: at(i * every) }));

test('a steady leak is measured at its rate, past the warm-up', () => {
  // Fast growth while warming (the cache filling), then 30 MB an hour.
  const samples = line(1800, 10, (s) => (s < 600 ? 300 + s / 2 : 600 + ((s - 600) * 30) / 3600));
  const t = rssTrend(samples, 1800);
  assert.equal(t.slopeMbPerHour, 30);
  assert.equal(t.flat, false);
  assert.equal(t.warmMb, 600);
  assert.equal(t.endMb, 610);
});

test('a flat process with garbage-collection sawteeth is flat, whatever its last reading', () => {
  const samples = line(1800, 10, (s) => 700 + ((s / 10) % 12) * 5);
  const t = rssTrend(samples, 1800);
  assert.ok(Math.abs(t.slopeMbPerHour) < FLAT_MB_PER_HOUR, `slope ${t.slopeMbPerHour}`);
  assert.equal(t.flat, true);
  assert.equal(t.maxMb, 755);
});

test('the slope of any straight line is its own, and the verdict follows it', () => {
  fc.assert(
    fc.property(fc.integer({ min: 100, max: 2000 }), fc.integer({ min: -100, max: 100 }), (base, perHour) => {
      const t = rssTrend(
        line(1800, 10, (s) => base + (s * perHour) / 3600),
        1800,
      );
      assert.ok(Math.abs(t.slopeMbPerHour - perHour) < 0.2);
      assert.equal(t.flat, t.slopeMbPerHour <= FLAT_MB_PER_HOUR);
    }),
  );
});

test('no readings is an error, not a verdict', () => {
  assert.throws(() => rssTrend([], 1800), /no RSS readings/);
});
