import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median, pairedBlockBootstrap, quantile, spreadOf, sum } from '../../tools/bench/stats';

/** A small deterministic generator (LCG), so the resamples are the same on every run. */
const lcg = (seed: number) => () => (seed = (seed * 1664525 + 1013904223) % 2 ** 32) / 2 ** 32;

test('median interpolates between the middle two of an even count', () => {
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([5, 1, 3]), 3);
  assert.ok(Number.isNaN(median([])));
});

test('a drift that moves both samples alike does not widen the paired interval', () => {
  // Each block's level drifts from 50 to 150 ms; a is always 1.1 × b within the block.
  const random = lcg(7);
  const blocks = Array.from({ length: 40 }, (_, i) => {
    const level = 50 + (i % 10) * 10;
    const b = Array.from({ length: 30 }, () => level + random() * 20);
    return { a: b.map((x) => x * 1.1), b };
  });
  const ci = pairedBlockBootstrap(blocks, { random: lcg(1) });
  assert.ok(Math.abs(ci.ratio - 1.1) < 1e-9, String(ci.ratio));
  assert.ok(ci.lo > 1.09 && ci.hi < 1.11, `${ci.lo} – ${ci.hi}`);
});

test('independent noise between the samples shows in the interval', () => {
  const random = lcg(3);
  const blocks = Array.from({ length: 40 }, () => ({
    a: Array.from({ length: 30 }, () => 100 + random() * 100),
    b: Array.from({ length: 30 }, () => 100 + random() * 100),
  }));
  const ci = pairedBlockBootstrap(blocks, { random: lcg(2) });
  assert.ok(ci.lo < ci.ratio && ci.ratio < ci.hi, `${ci.lo} ${ci.ratio} ${ci.hi}`);
  assert.ok(ci.lo < 1 && ci.hi > 1, `the same distribution: the interval holds 1 (${ci.lo} – ${ci.hi})`);
  assert.ok(ci.hi - ci.lo < 0.1, `1,200 values a side resolve it to within ±0.05 (${ci.lo} – ${ci.hi})`);
});

test('with stat sum, the ratio is of the totals, and a drift across pairs stays inside each pair', () => {
  // Pairs of block durations (s) for the same count of starts: the machine slows from 1 to 2 s a block,
  // and the gate's block (b) takes 1.02 × raw's (a) in every pair, so its rate is raw's / 1.02.
  const random = lcg(11);
  const blocks = Array.from({ length: 30 }, (_, i) => {
    const a = 1 + i / 30 + random() * 0.01;
    return { a: [a], b: [a * 1.02] };
  });
  const ci = pairedBlockBootstrap(blocks, { stat: sum, random: lcg(5) });
  const total = (k: 'a' | 'b') => blocks.reduce((t, x) => t + x[k][0]!, 0);
  assert.ok(Math.abs(ci.ratio - total('a') / total('b')) < 1e-12);
  assert.ok(Math.abs(ci.ratio - 1 / 1.02) < 1e-9, String(ci.ratio));
  assert.ok(ci.lo > 0.975 && ci.hi < 0.985, `${ci.lo} – ${ci.hi}`);
});

test('quantile interpolates between ranks; spreadOf gives min, quartiles and max', () => {
  assert.equal(quantile([1, 2, 3, 4, 5], 0.25), 2);
  assert.equal(quantile([1, 2], 0.5), 1.5);
  assert.deepEqual(spreadOf([5, 1, 3, 2, 4]), { min: 1, q1: 2, median: 3, q3: 4, max: 5 });
});
