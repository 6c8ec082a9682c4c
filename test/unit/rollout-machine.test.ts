import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rampBucket, type EvidenceCheck, type RolloutInput, type RolloutState, type RolloutStats } from '../../src/core/rollout';
import { KEPT, liveVersion, newRollout, refusal, rollbackPageKey, transition, versionOf } from '../../workflows/rollout/machine';

/*
 * A rollout's rules, one by one, on its pure machine: no server, no clock (every step is given its
 * time). Nothing runs it in a workflow yet.
 */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const AGENT = 'triage';
const ann = { who: 'ann', reason: 'ship v2' };
const bob = { who: 'bob', reason: 'ship v2 too' };

const NON_SUCCESS: EvidenceCheck = { name: 'errors', metric: 'non_success', margin: 0.1, minRuns: 4, onFail: 'finish' };
const SPEND: EvidenceCheck = { name: 'spend', metric: 'usd_per_run', factor: 2, minRuns: 4, onFail: 'stop' };

/** A version's figures: `runs`, `bad` of them not successful (all failed), spend and effects per run as given. */
const stats = (runs: number, bad = 0, more: Partial<RolloutStats> = {}): RolloutStats => ({
  runs,
  nonSuccess: bad,
  failures: bad,
  tokensPerRun: 1000,
  usdPerRun: 0.01,
  effectsPerRun: 1,
  ...more,
});

/** One step at `ms` after T0. */
const at = (m: RolloutState, input: RolloutInput, ms = 0) => transition(m, input, T0 + ms);
const startInput = (change: Partial<Extract<RolloutInput, { kind: 'start' }>> = {}): RolloutInput => ({
  kind: 'start',
  candidate: 'v2',
  share: 0.2,
  checks: [NON_SUCCESS],
  minRuns: 10,
  ...ann,
  ...change,
});
/** A rollout of v2 over v1 started at T0. */
const started = (change: Partial<Extract<RolloutInput, { kind: 'start' }>> = {}) => {
  const s = at(newRollout({ agent: AGENT, current: 'v1' }), startInput(change));
  assert.equal(s.reply.accepted, true, s.reply.message);
  return s.state;
};
const evidence = (current: RolloutStats, candidate: RolloutStats, sinceMs = 0): RolloutInput => ({
  kind: 'evidence',
  sinceMs: T0 + sinceMs,
  current,
  candidate,
});
const pages = (s: { actions: { kind: string }[] }) => s.actions.filter((a) => a.kind === 'page').length;

describe('the ramp', () => {
  test('a ramp of 20% sends exactly the wake keys whose bucket is below 2000 to the candidate', () => {
    const m = started({ share: 0.2 });
    const keys = Array.from({ length: 3000 }, (_, i) => `repo:${i}`);
    for (const k of keys) assert.equal(versionOf(m, k), rampBucket(AGENT, k) < 2000 ? 'candidate' : 'current', k);
    const on = keys.filter((k) => versionOf(m, k) === 'candidate').length;
    assert.ok(on > 450 && on < 750, `${on} of 3000 keys`);
  });

  test('idle and rolled back send every key to the current version, promoted every key to the candidate', () => {
    const keys = ['a', 'b', 'repo:1', 'repo:2'];
    const idle = newRollout({ agent: AGENT, current: 'v1' });
    assert.deepEqual(
      keys.map((k) => versionOf(idle, k)),
      ['current', 'current', 'current', 'current'],
    );
    const m = started({ share: 1 });
    assert.deepEqual(
      keys.map((k) => versionOf(m, k)),
      ['candidate', 'candidate', 'candidate', 'candidate'],
    );
    const back = at(m, { kind: 'rollback', ...ann }).state;
    assert.deepEqual(
      keys.map((k) => versionOf(back, k)),
      ['current', 'current', 'current', 'current'],
    );
  });

  test('steps widen and narrow in order; two operators stepping at once both apply, the last one standing', () => {
    const m = started();
    const widen = at(m, { kind: 'step', share: 0.5, ...ann }, 1000);
    assert.equal(widen.reply.accepted, true);
    assert.equal(widen.reply.message, 'v2 widened from 20% to 50% of wake keys');
    const narrow = at(widen.state, { kind: 'step', share: 0.3, ...bob }, 1000);
    assert.equal(narrow.reply.message, 'v2 narrowed from 50% to 30% of wake keys');
    assert.equal(narrow.state.share, 0.3);
    assert.deepEqual(
      narrow.state.history.map((e) => [e.kind, e.who, e.share]),
      [
        ['start', 'ann', 0.2],
        ['step', 'ann', 0.5],
        ['step', 'bob', 0.3],
      ],
    );
    // The same step twice: the second is refused, nothing changes.
    const again = at(narrow.state, { kind: 'step', share: 0.3, ...ann }, 2000);
    assert.deepEqual(again.reply, { accepted: false, message: 'the ramp is already at 30%', phase: 'ramping', share: 0.3 });
    assert.deepEqual(again.state, narrow.state);
  });
});

describe("a person's actions and their refusals", () => {
  test('every action needs a name and a reason; a start needs a well-formed share, minRuns and checks', () => {
    const idle = newRollout({ agent: AGENT, current: 'v1' });
    assert.equal(refusal(idle, { ...(startInput() as object), who: ' ' } as RolloutInput), "a person's action needs a name (who) and a reason");
    assert.equal(at(idle, startInput({ share: 0 })).reply.message, 'share is a fraction of wake keys over 0, at most 1');
    assert.equal(at(idle, startInput({ share: 1.5 })).reply.accepted, false);
    assert.equal(at(idle, startInput({ minRuns: 0 })).reply.message, 'minRuns is a whole number of candidate runs, at least 1');
    assert.equal(at(idle, startInput({ checks: [] })).reply.message, 'a rollout needs at least one evidence check');
    assert.equal(at(idle, startInput({ checks: [NON_SUCCESS, NON_SUCCESS] })).reply.message, 'two checks are named "errors"');
    assert.equal(at(idle, startInput({ checks: [{ ...SPEND, margin: 0.1 }] })).reply.message, 'check "spend": margin applies to non_success and failures only');
    assert.equal(
      at(idle, startInput({ checks: [{ ...NON_SUCCESS, margin: undefined }] })).reply.message,
      'check "errors": a check needs a margin, a factor or a bound',
    );
    assert.equal(at(idle, startInput({ candidate: 'v1' })).reply.message, 'v1 is already the version every wake runs');
  });

  test('a start is refused while ramping; a step, promote or rollback while nothing is ramping', () => {
    const m = started();
    assert.equal(at(m, startInput({ candidate: 'v3' })).reply.message, 'v2 is ramping at 20%: promote it or roll it back first');
    const idle = newRollout({ agent: AGENT, current: 'v1' });
    for (const input of [
      { kind: 'step', share: 0.5, ...ann },
      { kind: 'promote', ...ann },
      { kind: 'rollback', ...ann },
    ] as RolloutInput[])
      assert.deepEqual(at(idle, input).reply, { accepted: false, message: 'nothing is ramping: start a rollout first', phase: 'idle', share: 0 });
  });

  test('a promote with too few candidate runs is refused; with enough and every check passing it is taken', () => {
    const m = started();
    assert.match(at(m, { kind: 'promote', ...ann }, 1000).reply.message, /^no evidence from this step's window \(since 2026-12-01T00:00:00.000Z\) yet/);
    const few = at(m, evidence(stats(40), stats(9)), 1000);
    assert.equal(few.reply.accepted, true);
    const refused = at(few.state, { kind: 'promote', ...ann }, 1000);
    assert.deepEqual(refused.reply, { accepted: false, message: "9 candidate runs in this step's window: a promote needs 10", phase: 'ramping', share: 0.2 });
    const enough = at(few.state, evidence(stats(40), stats(10)), 2000);
    const promoted = at(enough.state, { kind: 'promote', ...ann }, 2000);
    assert.equal(promoted.reply.accepted, true);
    assert.equal(promoted.reply.message, 'v2 promoted on 10 candidate runs: every new wake runs it');
    assert.equal(promoted.state.phase, 'promoted');
    assert.equal(promoted.state.share, 1);
    assert.equal(liveVersion(promoted.state), 'v2');
    const entry = promoted.state.history.at(-1)!;
    assert.equal(entry.kind, 'promote');
    assert.equal(entry.figures?.evidence.candidate.runs, 10);
    assert.deepEqual(
      entry.figures?.checks.map((v) => v.status),
      ['pass'],
    );
    // The second of two operators promoting at once.
    assert.equal(at(promoted.state, { kind: 'promote', ...bob }, 2000).reply.message, 'v2 is already promoted: to go back, start a rollout of v1');
  });

  test("a promote counts runs in the current step's window only, and needs every check passed, not waiting", () => {
    const m = started({ checks: [NON_SUCCESS, { ...SPEND, minRuns: 20 }] });
    const before = at(m, evidence(stats(40), stats(12)), 1000).state;
    const stepped = at(before, { kind: 'step', share: 0.5, ...ann }, 5000).state;
    assert.match(at(stepped, { kind: 'promote', ...ann }, 5000).reply.message, /^no evidence from this step's window/);
    // Figures over a window that began before the step are taken (they may roll back) but count nothing for a promote.
    const old = at(stepped, evidence(stats(40), stats(30), 0), 6000);
    assert.equal(old.reply.accepted, true);
    assert.match(at(old.state, { kind: 'promote', ...ann }, 6000).reply.message, /^no evidence from this step's window/);
    const fresh = at(stepped, evidence(stats(40), stats(12), 5000), 7000).state;
    assert.equal(at(fresh, { kind: 'promote', ...ann }, 7000).reply.message, 'check spend has not passed: 12 of the 20 candidate runs it needs');
  });

  test('a person rolls back: share 0, every key on the current version, runs in flight stopped only when asked; no page', () => {
    const m = started();
    const finish = at(m, { kind: 'rollback', ...ann }, 1000);
    assert.equal(finish.state.phase, 'rolled_back');
    assert.equal(finish.state.share, 0);
    assert.deepEqual(finish.actions, []);
    assert.equal(finish.reply.message, 'v2 rolled back by ann: every new wake runs v1; its runs in flight finish as they are');
    const stop = at(m, { kind: 'rollback', stopInFlight: true, ...ann }, 1000);
    assert.deepEqual(stop.actions, [{ kind: 'stop', agent: AGENT, version: 'v2', who: 'ann', reason: 'rolled back by ann: ship v2' }]);
    assert.equal(stop.state.history.at(-1)?.stopped, true);
  });

  test('after a rollback a step is refused and a new start is allowed; after a promote the promoted version is the current one', () => {
    const back = at(started(), { kind: 'rollback', ...ann }, 1000).state;
    assert.equal(at(back, { kind: 'step', share: 0.5, ...ann }, 2000).reply.message, 'v2 was rolled back: start a new rollout to try again');
    const again = at(back, startInput({ candidate: 'v2', share: 0.05 }), 3000);
    assert.equal(again.reply.accepted, true);
    assert.equal(again.reply.message, 'rollout #2: v2 takes 5% of wake keys (current v1)');
    const promoted = at(at(again.state, evidence(stats(40), stats(10), 3000), 4000).state, { kind: 'promote', ...ann }, 4000).state;
    assert.equal(at(promoted, startInput({ candidate: 'v2' }), 5000).reply.message, 'v2 is already the version every wake runs');
    const v3 = at(promoted, startInput({ candidate: 'v3' }), 5000).state;
    assert.deepEqual([v3.current, v3.candidate, v3.rollouts], ['v2', 'v3', 3]);
  });
});

describe('evidence, and the rollback the rollout makes by itself', () => {
  test('a candidate failing half its runs against a current failing none is rolled back by itself: one page, its reason in the history', () => {
    const m = started({ checks: [NON_SUCCESS, SPEND] });
    const s = at(m, evidence(stats(20), stats(6, 3)), 60_000);
    assert.equal(s.state.phase, 'rolled_back');
    assert.equal(s.state.share, 0);
    assert.equal(versionOf(s.state, 'repo:1'), 'current');
    const reason = 'errors: non_success: candidate 50% (3 of 6 runs) over current 0% + 10%';
    assert.equal(s.reply.message, `rolled back by check:errors: ${reason}`);
    assert.deepEqual(
      s.actions.map((a) => a.kind),
      ['page'],
      'the failed check lets runs in flight finish: no stop',
    );
    const page = s.actions[0] as Extract<(typeof s.actions)[number], { kind: 'page' }>;
    assert.equal(page.page.dedupKey, rollbackPageKey(AGENT, 1));
    assert.equal(page.page.dedupKey, 'wakegate/rollout/triage/1/rollback');
    assert.equal(page.page.summary, `wakegate rolled back triage v2 by itself (rollout #1): ${reason}. Every new wake runs v1.`);
    const entry = s.state.history.at(-1)!;
    assert.deepEqual(
      { kind: entry.kind, who: entry.who, reason: entry.reason, at: entry.at, share: entry.share, paged: entry.paged },
      { kind: 'rollback', who: 'check:errors', reason, at: '2026-12-01T00:01:00.000Z', share: 0, paged: page.page.dedupKey },
    );
    assert.deepEqual(entry.figures?.evidence.candidate, stats(6, 3));
    assert.deepEqual(
      entry.figures?.checks.map((v) => [v.name, v.status]),
      [
        ['errors', 'fail'],
        ['spend', 'pass'],
      ],
    );
    // Evidence after the rollback pages nothing more.
    const later = at(s.state, evidence(stats(20), stats(8, 5)), 70_000);
    assert.equal(pages(later), 0);
    assert.deepEqual(later.actions, []);
    assert.equal(later.reply.accepted, false);
    assert.match(later.reply.message, /^not acted on: nothing is ramping \(rolled_back\)/);
    assert.deepEqual(later.state, s.state);
  });

  test('one bad run of two does not roll back: a check cannot fail before its minRuns', () => {
    const m = started();
    const s = at(m, evidence(stats(20), stats(2, 1)), 1000);
    assert.equal(s.state.phase, 'ramping');
    assert.deepEqual(s.actions, []);
    assert.equal(s.reply.message, 'errors: waiting (2 of the 4 candidate runs it needs)');
  });

  test('a failed check that says stop stops the candidate runs in flight; several failing make one rollback and one page', () => {
    const m = started({ checks: [NON_SUCCESS, SPEND] });
    const s = at(m, evidence(stats(20), stats(8, 4, { usdPerRun: 0.05 })), 1000);
    assert.deepEqual(
      s.actions.map((a) => a.kind),
      ['page', 'stop'],
    );
    assert.equal(s.state.history.filter((e) => e.kind === 'rollback').length, 1);
    const stop = s.actions[1] as Extract<(typeof s.actions)[number], { kind: 'stop' }>;
    assert.equal(stop.version, 'v2');
    assert.equal(stop.who, 'check:errors');
    assert.match(stop.reason, /spend: usd_per_run: candidate 0.05 over 2 × current 0.01/);
  });

  test('limits: a bound stands alone; a relative limit needs runs of the current version; the least limit is the one', () => {
    const bound: EvidenceCheck = { name: 'diff', metric: 'shadow_diff', bound: 0.3, minRuns: 1, onFail: 'finish' };
    const effects: EvidenceCheck = { name: 'effects', metric: 'effects_per_run', factor: 3, bound: 2, minRuns: 1, onFail: 'finish' };
    const m = started({ checks: [bound, effects] });
    const noShadow = at(m, evidence(stats(0), stats(3, 0, { effectsPerRun: 1.5 })), 1000);
    assert.equal(noShadow.reply.message, 'diff: waiting (no figure of the candidate yet); effects: pass (effects_per_run: candidate 1.5 within the bound 2)');
    const wide = at(m, evidence(stats(5, 0, { effectsPerRun: 1 }), stats(3, 0, { effectsPerRun: 2.5, shadowDiff: 0.2 })), 1000);
    assert.equal(wide.state.phase, 'rolled_back');
    assert.equal(wide.reply.message, 'rolled back by check:effects: effects: effects_per_run: candidate 2.5 over the bound 2');
    const waiting = started({ checks: [{ ...NON_SUCCESS, minRuns: 1 }] });
    assert.equal(at(waiting, evidence(stats(0), stats(3, 3)), 1000).reply.message, 'errors: waiting (no runs of the current version to compare with)');
  });

  test('evidence whose window began before this rollout started is not acted on', () => {
    const back = at(started(), { kind: 'rollback', ...ann }, 1000).state;
    const again = at(back, startInput(), 10_000).state;
    const s = at(again, evidence(stats(20), stats(6, 6), 0), 11_000);
    assert.equal(s.reply.message, 'not acted on: its window began before rollout #2 started');
    assert.equal(s.state.phase, 'ramping');
    assert.equal(s.state.evidence, undefined);
  });

  test('malformed figures are refused', () => {
    const m = started();
    assert.equal(at(m, evidence(stats(2, 3), stats(1))).reply.message, "the current version's figures: failures ≤ nonSuccess ≤ runs");
    assert.equal(at(m, evidence(stats(2), stats(1, 0, { shadowDiff: 2 }))).reply.message, "the candidate's figures: shadowDiff is a share, 0 to 1");
  });
});

describe('a held or halted fleet holds the rollout', () => {
  test('halted: step, promote and start are refused and evidence is not acted on; a person may still roll back', () => {
    const ready = at(started(), evidence(stats(40), stats(12)), 1000).state;
    const halted = at(ready, { kind: 'fleet', mode: 'halted' }, 2000);
    assert.equal(halted.reply.message, 'the fleet is halted: the rollout is held; ramping v2 to 20% of wake keys (current v1)');
    const m = halted.state;
    const held = 'the fleet is halted: the rollout is held until the supervisor is armed again';
    assert.equal(at(m, { kind: 'step', share: 0.5, ...ann }, 3000).reply.message, held);
    assert.equal(at(m, { kind: 'promote', ...ann }, 3000).reply.message, held);
    const bad = at(m, evidence(stats(20), stats(10, 10)), 3000);
    assert.deepEqual(bad.actions, []);
    assert.equal(bad.state.phase, 'ramping');
    assert.equal(bad.reply.accepted, false);
    assert.equal(bad.reply.message, 'kept, not acted on: the fleet is halted');
    assert.equal(at(bad.state, { kind: 'rollback', ...ann }, 3000).reply.accepted, true);
    const idle = at(newRollout({ agent: AGENT, current: 'v1' }), { kind: 'fleet', mode: 'draining' }).state;
    assert.equal(at(idle, startInput()).reply.message, 'the fleet is draining: the rollout is held until the supervisor is armed again');
  });

  test('armed again: figures kept while held block a step and a promote until fresh evidence; fresh evidence acts', () => {
    const m = at(started(), { kind: 'fleet', mode: 'halted' }, 1000).state;
    const kept = at(m, evidence(stats(20), stats(10, 10), 500), 2000).state;
    const armed = at(kept, { kind: 'fleet', mode: 'armed' }, 3000).state;
    assert.equal(armed.phase, 'ramping');
    assert.equal(
      at(armed, { kind: 'step', share: 0.5, ...ann }, 3000).reply.message,
      'check errors fails on the latest evidence (non_success: candidate 100% (10 of 10 runs) over current 0% + 10%): roll back, or wait for the next evidence',
    );
    const good = at(armed, evidence(stats(20), stats(10), 500), 3000).state;
    assert.equal(at(good, { kind: 'step', share: 0.5, ...ann }, 3000).reply.accepted, true);
    const kept2 = at(at(good, { kind: 'fleet', mode: 'draining' }, 4000).state, evidence(stats(20), stats(12), 500), 4000).state;
    const armed2 = at(kept2, { kind: 'fleet', mode: 'armed' }, 5000).state;
    assert.equal(at(armed2, { kind: 'promote', ...ann }, 5000).reply.message, 'the latest evidence came while the fleet was held: wait for the next');
    const failing = at(armed, evidence(stats(20), stats(10, 10), 500), 3000);
    assert.equal(failing.state.phase, 'rolled_back');
    assert.equal(pages(failing), 1);
  });
});

describe('the state', () => {
  test('is plain JSON; a step leaves the state it was given as it was and decides the same again', () => {
    const m = started({ checks: [{ ...NON_SUCCESS, bound: undefined }] });
    assert.deepEqual(JSON.parse(JSON.stringify(m)), m);
    const before = JSON.stringify(m);
    const input = evidence(stats(20), stats(6, 3));
    const s = at(m, input, 1000);
    assert.equal(JSON.stringify(m), before);
    assert.deepEqual(at(m, input, 1000), s);
    assert.deepEqual(JSON.parse(JSON.stringify(s.state)), s.state);
  });

  test('keeps only its newest history entries (KEPT of them), each numbered', () => {
    let m = started();
    for (let i = 0; i < KEPT + 10; i++) m = at(m, { kind: 'step', share: i % 2 ? 0.2 : 0.3, ...ann }, i).state;
    assert.equal(m.history.length, KEPT);
    assert.equal(m.history.at(-1)!.id, KEPT + 11);
    assert.equal(m.history[0]!.id, 12);
  });
});
