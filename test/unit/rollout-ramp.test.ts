import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hash64 } from '../../src/core/hash';
import { RAMP_BUCKETS, rampBucket, shareBuckets, versionFor } from '../../src/core/rollout';
import { keyHash } from '../../workflows/coalescer/seen';

/*
 * A rollout's ramp by wake key (src/core/rollout.ts): which version a wake gets, by a stable hash of
 * its agent and wake key. No server, no clock.
 */

const keyArb = fc.string({ minLength: 0, maxLength: 40, unit: 'binary' });
const agentArb = fc.string({ minLength: 1, maxLength: 12 });
const shareArb = fc.double({ min: 0, max: 1, noNaN: true });

test('the hash is pinned: stored compact seen rows and live ramps keep their meaning across releases', () => {
  // The coalescer's compact rows persist keyHash (the same 64 bits, in base64url); a ramp in flight persists which keys are on the candidate.
  assert.equal(keyHash(''), '#EiL3Lga7o2D');
  assert.equal(keyHash('a'), '#FAcK6eCyXkB');
  assert.equal(keyHash('github/push/repo:pkg/2026-12-01'), '#Dt43-4T67Wk');
  assert.equal(keyHash('ü€😀'), '#CcHLcCi0K3o');
  assert.deepEqual(hash64('a'), [parseInt('0m87353', 36), parseInt('10ae7sx', 36)]);
  assert.deepEqual(
    ['repo:a', 'repo:b', 'campaign/42'].map((k) => rampBucket('triage', k)),
    ['repo:a', 'repo:b', 'campaign/42'].map((k) => Math.floor((hash64(`6:triage/${k}`)[1] * RAMP_BUCKETS) / 2 ** 32)),
  );
});

test('the same agent and wake key always get the same bucket, in [0, 10000)', () => {
  fc.assert(
    fc.property(agentArb, keyArb, (agent, key) => {
      const b = rampBucket(agent, key);
      assert.ok(Number.isInteger(b) && b >= 0 && b < RAMP_BUCKETS, `bucket ${b}`);
      assert.equal(rampBucket(agent, key), b);
      assert.equal(rampBucket(`${agent}`, `${key}`), b, 'a copy of the strings hashes alike');
    }),
    { numRuns: 500 },
  );
});

test('a key on the candidate at one share stays on it at every wider share (the ramp is monotone)', () => {
  fc.assert(
    fc.property(agentArb, keyArb, shareArb, shareArb, (agent, wakeKey, a, b) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      if (versionFor({ agent, wakeKey, share: lo }) === 'candidate') assert.equal(versionFor({ agent, wakeKey, share: hi }), 'candidate');
    }),
    { numRuns: 1000 },
  );
  // The 20% → 50% step by example: every key in the 20% is in the 50%.
  const keys = Array.from({ length: 2000 }, (_, i) => `repo:${i}`);
  const at = (share: number) => keys.filter((wakeKey) => versionFor({ agent: 'triage', wakeKey, share }) === 'candidate');
  const twenty = at(0.2);
  const fifty = new Set(at(0.5));
  assert.ok(twenty.every((k) => fifty.has(k)));
});

test('a share is round(share × 10000) buckets: 0 sends no key to the candidate, 1 every key', () => {
  assert.equal(shareBuckets(0), 0);
  assert.equal(shareBuckets(0.2), 2000);
  assert.equal(shareBuckets(0.00004), 0);
  assert.equal(shareBuckets(0.00005), 1);
  assert.equal(shareBuckets(1), RAMP_BUCKETS);
  fc.assert(
    fc.property(agentArb, keyArb, (agent, wakeKey) => {
      assert.equal(versionFor({ agent, wakeKey, share: 0 }), 'current');
      assert.equal(versionFor({ agent, wakeKey, share: 1 }), 'candidate');
      const share = rampBucket(agent, wakeKey) / RAMP_BUCKETS;
      assert.equal(versionFor({ agent, wakeKey, share }), 'current', 'a bucket is in a share only below its end');
      assert.equal(versionFor({ agent, wakeKey, share: share + 1 / RAMP_BUCKETS }), 'candidate');
    }),
    { numRuns: 500 },
  );
});

test("a share's fraction of many random keys is within a few percent of the share", () => {
  fc.assert(
    fc.property(agentArb, fc.constantFrom(0.01, 0.05, 0.2, 0.5, 0.8), fc.integer(), (agent, share, seed) => {
      const n = 4000;
      let on = 0;
      for (let i = 0; i < n; i++) if (versionFor({ agent, wakeKey: `key-${seed}-${i}`, share }) === 'candidate') on++;
      // Five standard deviations of a binomial (4 points at 50%), and at least one: a fair hash misses it about once in 2 million.
      const tolerance = Math.max(0.01, 5 * Math.sqrt((share * (1 - share)) / n));
      assert.ok(Math.abs(on / n - share) <= tolerance, `${on} of ${n} keys at ${share}`);
    }),
    { numRuns: 40 },
  );
  // Keys as they come, short and alike (repo:0 … repo:9999), spread as evenly over the buckets' tenths.
  const tenths = new Array<number>(10).fill(0);
  for (let i = 0; i < 10_000; i++) tenths[Math.floor(rampBucket('deps', `repo:${i}`) / 1000)]!++;
  for (const t of tenths) assert.ok(t > 900 && t < 1100, `tenths of the buckets: ${tenths.join(', ')}`);
});

test('two agents ramp different keys: the agent is in the hash', () => {
  const keys = Array.from({ length: 4000 }, (_, i) => `entity/${i}`);
  const both = keys.filter((wakeKey) => versionFor({ agent: 'triage', wakeKey, share: 0.5 }) === versionFor({ agent: 'deps', wakeKey, share: 0.5 }));
  // Independent halves agree on about half the keys; the same hash would agree on all.
  assert.ok(Math.abs(both.length / keys.length - 0.5) < 0.05, `${both.length} of ${keys.length} keys on the same version`);
  // The agent's name is length-prefixed: ("a/b", "c…") and ("a", "b/c…") are not the same pair.
  const pairs = Array.from({ length: 200 }, (_, i) => [rampBucket('a/b', `c${i}`), rampBucket('a', `b/c${i}`)]);
  assert.ok(pairs.filter(([x, y]) => x === y).length < 5);
});
