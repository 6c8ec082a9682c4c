import { test } from 'node:test';
import assert from 'node:assert/strict';
import { medianInterval } from '../../bench/stats';

test("the median's interval comes from order statistics: 8 values give the 2nd smallest to the 2nd largest, 93% coverage", () => {
  const xs = [1.29, 0.6, 1.03, 1.12, 1.24, 1.06, 1.27, 1.03];
  const ci = medianInterval(xs);
  assert.equal(ci.lo, 1.03);
  assert.equal(ci.hi, 1.27);
  assert.ok(Math.abs(ci.coverage - (1 - 2 * (9 / 256))) < 1e-12, String(ci.coverage));
});

test('more values narrow it: 20 values give the 6th smallest to the 6th largest, each tail at most 5%', () => {
  const xs = Array.from({ length: 20 }, (_, i) => i + 1);
  const ci = medianInterval(xs);
  // P(Bin(20, 1/2) <= 5) = 0.0207, P(<= 6) = 0.0577: k = 6.
  assert.equal(ci.lo, 6);
  assert.equal(ci.hi, 15);
  assert.ok(ci.coverage > 0.95 && ci.coverage < 0.96, String(ci.coverage));
});

test('too few values for a 5% tail: the whole range, with the coverage it has', () => {
  const ci = medianInterval([3, 1, 2, 4]);
  assert.deepEqual([ci.lo, ci.hi], [1, 4]);
  assert.equal(ci.coverage, 1 - 2 / 16);
  assert.deepEqual(medianInterval([]), { lo: NaN, hi: NaN, coverage: 0 });
});
