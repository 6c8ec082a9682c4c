import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { versionOfView, viewOf, type EvidenceCheck, type RolloutInput, type RolloutState } from '../../src/core/rollout';
import { newRollout, transition, versionOf } from '../../workflows/rollout/machine';

/*
 * The rollout's published view (src/core/rollout.ts): a run's first step picks its version from it
 * with `versionOfView`, which must agree with the machine's `versionOf` in every phase, whatever
 * sequence of moves led there.
 */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const check: EvidenceCheck = { name: 'errors', metric: 'non_success', margin: 0.2, minRuns: 1, onFail: 'finish' };
const ann = { who: 'ann', reason: 'test' };
const stats = (runs: number, bad: number) => ({ runs, nonSuccess: bad, failures: bad, tokensPerRun: 1, usdPerRun: 0.01, effectsPerRun: 1 });

const inputArb: fc.Arbitrary<RolloutInput> = fc.oneof(
  fc
    .record({ candidate: fc.constantFrom('v1', 'v2', 'v3'), share: fc.double({ min: 0, max: 1, noNaN: true }) })
    .map(({ candidate, share }): RolloutInput => ({ kind: 'start', candidate, share, checks: [check], minRuns: 1, ...ann })),
  fc.double({ min: 0, max: 1, noNaN: true }).map((share): RolloutInput => ({ kind: 'step', share, ...ann })),
  fc.constant<RolloutInput>({ kind: 'promote', ...ann }),
  fc.constant<RolloutInput>({ kind: 'rollback', ...ann }),
  fc.nat(3).map((bad): RolloutInput => ({ kind: 'evidence', sinceMs: T0 + 10_000_000, current: stats(3, 0), candidate: stats(3, bad) })),
);

/** The version name the machine gives a wake: its RolloutVersion resolved against the state. */
const machineVersion = (m: RolloutState, key: string): string => (versionOf(m, key) === 'candidate' ? m.candidate! : m.current);

test('versionOfView agrees with the machine in every phase reached by any sequence of moves', () => {
  fc.assert(
    fc.property(fc.array(inputArb, { maxLength: 12 }), fc.array(fc.string({ maxLength: 20 }), { minLength: 1, maxLength: 30 }), (inputs, keys) => {
      let m = newRollout({ agent: 'triage', current: 'v1' });
      const agree = () => {
        const view = viewOf(m);
        for (const k of keys) assert.equal(versionOfView(view, 'triage', k), machineVersion(m, k), `${view.phase} ${view.share} ${k}`);
      };
      agree();
      inputs.forEach((input, i) => {
        m = transition(m, input, T0 + 20_000_000 + i).state;
        agree();
      });
    }),
    { numRuns: 300 },
  );
});

test('the view is plain JSON and names the rollout it belongs to', () => {
  const m = transition(
    newRollout({ agent: 'triage', current: 'v1' }),
    { kind: 'start', candidate: 'v2', share: 0.2, checks: [check], minRuns: 1, ...ann },
    T0,
  ).state;
  const view = viewOf(m);
  assert.deepEqual(view, { phase: 'ramping', current: 'v1', candidate: 'v2', share: 0.2, rollout: 1 });
  assert.deepEqual(JSON.parse(JSON.stringify(view)), view);
  assert.deepEqual(viewOf(newRollout({ agent: 'triage', current: 'v1' })), { phase: 'idle', current: 'v1', share: 0, rollout: 0 });
});

test('a ramp at 20% sends about a fifth of wake keys to the candidate; promoted sends all; rolled back none', () => {
  const keys = Array.from({ length: 5000 }, (_, i) => `repo:${i}`);
  const ramp = { phase: 'ramping' as const, current: 'v1', candidate: 'v2', share: 0.2, rollout: 1 };
  const onCandidate = keys.filter((k) => versionOfView(ramp, 'triage', k) === 'v2').length / keys.length;
  assert.ok(onCandidate > 0.18 && onCandidate < 0.22, `${onCandidate}`);
  assert.ok(keys.every((k) => versionOfView({ ...ramp, phase: 'promoted', share: 1 }, 'triage', k) === 'v2'));
  assert.ok(keys.every((k) => versionOfView({ ...ramp, phase: 'rolled_back', share: 0 }, 'triage', k) === 'v1'));
});
