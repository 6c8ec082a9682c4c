import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  continueWith,
  memoOf,
  nextWakeMs,
  refusal,
  start,
  statusOf,
  transition,
  type Action,
  type Input,
  type MachineState,
} from '../../workflows/supervisor/machine';
import type { PageAction, RunClosure, RunObservation, SupervisorPolicy, WindowCap } from '../../src/core/supervisor-types';
import { IDLE_OBSERVE_MS, MAX_QUIET_OBSERVE_MS } from '../../workflows/supervisor/observe';
import { ACTIVE_AFTER_MS, MIN_WATCH_QUIET_MS, WATCH_MAX_MS } from '../../workflows/supervisor/state';

/*
 * The supervisor's rules, one by one, on its pure machine: no server, no clock (every step is given
 * its time). The workflow shell that feeds it and performs its actions is proven by
 * test/processes/supervisor.test.ts and test/dev-server/continue-as-new.test.ts on a real dev server.
 */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const SELF = 'wakegate-supervisor/q';

function policy(change: Partial<SupervisorPolicy> = {}): SupervisorPolicy {
  return {
    storm: { fleetPerMinute: 10, rationale: 'test' },
    errorRate: { windowMs: 60_000, minRuns: 4, threshold: 0.5, reasons: ['failed', 'escalated'], rationale: 'test' },
    caps: { fleet: [], agents: {} },
    onTrip: {},
    overCap: {},
    observeEveryMs: 500,
    holdRecheckMs: 1000,
    ...change,
  };
}
const capsFor = (agent: string, ...caps: Omit<WindowCap, 'rationale'>[]) => ({
  fleet: [],
  agents: { [agent]: caps.map((c) => ({ ...c, rationale: 'test' })) },
});

/** The memo, but the policy's hash (its own test below). */
const memoWithoutHash = (m: MachineState) => {
  const { policyHash: _hash, ...memo } = memoOf(m);
  return memo;
};

/** A machine as a fresh supervisor starts it at T0. */
const fresh = (p: SupervisorPolicy = policy()) => start({ taskQueue: 'q', policy: p }, T0);

/** One step at `ms` after T0. */
const at = <I extends Input>(m: MachineState, input: I, ms: number) => transition(m, input, T0 + ms);
/** The actions the workflow performs through activities (log lines left out). */
const acts = (s: { actions: Action[] }) => s.actions.filter((a) => a.kind !== 'log');
const kinds = (s: { actions: Action[] }) => acts(s).map((a) => a.kind);
const tripPages = (s: { actions: Action[] }) => acts(s).filter((a) => a.kind === 'page').length;

const closure = (agent: string, reason: string, closeMs: number, spend: Partial<RunClosure> = {}): RunClosure => ({
  agent,
  reason,
  closeMs: T0 + closeMs,
  costUsd: 0,
  tokens: 0,
  ...spend,
});
const observed = (m: MachineState, ms: number, closures: RunClosure[], truncated = false) =>
  at(m, { kind: 'observed', read: { closures, truncated, toMs: T0 + ms - 1000 } }, ms);
/** A watch's answer at `ms`: read to a second before, every run open by then seen; `settled` unless told otherwise. */
const watched = (closures: RunClosure[], ms: number, extra: Partial<RunObservation> = {}): Extract<Input, { kind: 'observed' }> => ({
  kind: 'observed',
  read: { closures, truncated: false, toMs: T0 + ms - 1000, coveredToMs: T0 + ms - 1000, settled: true, ...extra },
});

/** A machine tripped by a storm at T0 (trip #1), and the step that tripped it. */
function stormed(p: SupervisorPolicy = policy()) {
  const s = at(fresh(p), { kind: 'wakes', counts: { canary: p.storm.fleetPerMinute + 1 } }, 0);
  assert.equal(s.state.mode, 'halted');
  return s;
}

describe('the storm breaker', () => {
  test('wakes over the fleet threshold in a minute trip it once: it pages, stops the agents that cancel on a trip, and holds every wake', () => {
    const p = policy({ onTrip: { deps: 'cancel', canary: 'finish' } });
    const under = at(fresh(p), { kind: 'wakes', counts: { canary: 10 } }, 0);
    assert.equal(under.state.mode, 'armed');
    assert.deepEqual(under.actions, []);

    const s = at(under.state, { kind: 'wakes', counts: { canary: 1 } }, 1000);
    const reason = '11 wakes in the last minute, over the fleet threshold of 10';
    assert.equal(s.state.mode, 'halted');
    assert.deepEqual({ ...s.state.trip!, counters: undefined }, { id: 1, kind: 'storm', at: iso(1000), reason, counters: undefined });
    assert.equal(s.state.trip!.counters['wakes per minute [*]'], 11);
    assert.deepEqual(kinds(s), ['page', 'stop']);
    const [page, stop] = acts(s) as [Extract<Action, { kind: 'page' }>, Extract<Action, { kind: 'stop' }>];
    assert.equal(page.tripId, 1);
    assert.equal(page.page.dedupKey, `wakegate/${SELF}/trip-1`);
    assert.equal(page.page.severity, 'critical');
    assert.match(page.page.summary, /^wakegate halted \(trip #1, storm\): 11 wakes .* Every new wake is held until a person resets it\.$/);
    assert.match(String(page.page.details.howToReset), /supervisor reset --who/);
    assert.deepEqual(stop, { kind: 'stop', agents: ['deps'], who: 'supervisor', reason: `trip #1: ${reason}` });
    assert.deepEqual(
      s.actions.find((a) => a.kind === 'log'),
      { kind: 'log', level: 'warn', message: 'supervisor tripped', attrs: { supervisorId: SELF, tripId: 1, kind: 'storm', reason } },
    );
    assert.deepEqual(memoWithoutHash(s.state), { mode: 'halted', tripId: 1, tripReason: reason, capsFull: [], releases: [] });

    // Sticky and paged once: more wakes trip nothing again.
    const more = at(s.state, { kind: 'wakes', counts: { canary: 50 } }, 2000);
    assert.deepEqual(more.actions, []);
    assert.equal(more.state.trips.length, 1);
    // Held: no run gets a permit while the breaker is not armed.
    assert.deepEqual(at(more.state, { kind: 'lease', requests: { canary: 2, deps: 1 } }, 2000).reply, { grants: { canary: 0, deps: 0 }, mode: 'halted' });
  });

  test('the minute slides: wakes a minute apart never add up to a storm', () => {
    const first = at(fresh(), { kind: 'wakes', counts: { canary: 10 } }, 0);
    const later = at(first.state, { kind: 'wakes', counts: { canary: 10 } }, 61_000);
    assert.equal(later.state.mode, 'armed');
    assert.equal(statusOf(later.state, T0 + 61_000).counters[0]!.value, 10);
  });

  test('one agent over the per-agent threshold trips it while the fleet is under its own', () => {
    const s = at(
      fresh(policy({ storm: { fleetPerMinute: 100, agentPerMinute: 5, rationale: 'test' } })),
      { kind: 'wakes', counts: { canary: 3, noisy: 6 } },
      0,
    );
    assert.equal(s.state.trip?.kind, 'storm');
    assert.equal(s.state.trip?.reason, '6 wakes of noisy in the last minute, over the per-agent threshold of 5');
  });

  test('a policy brought by a worker (configure) applies from the next wake', () => {
    const s = at(fresh(), { kind: 'configure', policy: policy({ storm: { fleetPerMinute: 2, rationale: 'test' } }) }, 0);
    assert.equal(s.state.policy.storm.fleetPerMinute, 2);
    assert.equal(at(s.state, { kind: 'wakes', counts: { canary: 3 } }, 0).state.mode, 'halted');
  });
});

describe('the error-rate breaker', () => {
  test('enough closed runs ending in an error reason, over the threshold, trip it and page', () => {
    const s = observed(fresh(), 5000, [
      closure('canary', 'failed', 1000),
      closure('canary', 'success', 1100),
      closure('deps', 'escalated', 1200),
      closure('deps', 'failed', 1300),
    ]);
    assert.equal(s.state.mode, 'halted');
    assert.equal(s.state.trip?.kind, 'error_rate');
    assert.equal(s.state.trip?.reason, '3 of the last 4 runs of the fleet ended failed/escalated (75%), over 50%');
    assert.deepEqual(kinds(s), ['page']);
    assert.deepEqual(statusOf(s.state, T0 + 5000).recentRuns, { failed: 2, success: 1, escalated: 1 });
  });

  test('too few runs to judge trip nothing, however many failed', () => {
    const s = observed(fresh(), 5000, [closure('canary', 'failed', 1000), closure('canary', 'failed', 1100), closure('canary', 'failed', 1200)]);
    assert.equal(s.state.mode, 'armed');
    assert.deepEqual(acts(s), []);
  });

  test('one agent failing trips it while the fleet as a whole is under the threshold', () => {
    const good = Array.from({ length: 6 }, (_, i) => closure('canary', 'success', 1000 + i));
    const bad = Array.from({ length: 4 }, (_, i) => closure('deps', 'failed', 2000 + i));
    const s = observed(fresh(), 5000, [...good, ...bad]);
    assert.equal(s.state.trip?.reason, '4 of the last 4 runs of deps ended failed/escalated (100%), over 50%');
  });

  test('runs that closed before the window count for nothing', () => {
    const s = observed(
      fresh(),
      70_000,
      [1, 2, 3, 4].map((i) => closure('canary', 'failed', i)),
    );
    assert.equal(s.state.mode, 'armed');
    assert.deepEqual(statusOf(s.state, T0 + 70_000).recentRuns, {});
  });
});

describe('rolling caps', () => {
  test('a wake cap grants what its window has room for, holds the rest with a page, and lets them go when the window slides', () => {
    const s = at(fresh(policy({ caps: capsFor('canary', { windowMs: 6000, wakes: 2 }) })), { kind: 'lease', requests: { canary: 3 } }, 0);
    // The window was empty when asked: no slide is known yet, and the held run re-checks at its own pace.
    assert.deepEqual(s.reply, { grants: { canary: 2 }, mode: 'armed' });
    assert.deepEqual(s.state.capHolds, { canary: { scope: 'canary', cap: '2 wakes per 6 s', sinceMs: T0 } });
    assert.deepEqual(memoWithoutHash(s.state).capsFull, ['canary']);
    assert.equal(s.state.mode, 'armed', 'a cap holds; it does not trip the breaker');
    const [page] = acts(s) as [Extract<Action, { kind: 'page' }>];
    assert.deepEqual({ ...page, page: undefined }, { kind: 'page', capAgent: 'canary', capKey: 'canary|canary|2 wakes per 6 s', page: undefined });
    assert.equal(page.page.dedupKey, `wakegate/${SELF}/cap-1`);
    assert.equal(page.page.severity, 'warning');
    assert.equal(page.page.summary, 'wakegate: canary is over its cap (2 wakes per 6 s); wakes of canary are held until the window slides.');

    // Buckets of 250 ms (a sixtieth of 6 s, at least 250 ms): the permits of T0 leave the window 6.25 s on.
    assert.deepEqual(at(s.state, { kind: 'lease', requests: { canary: 1 } }, 3000).reply, {
      grants: { canary: 0 },
      mode: 'armed',
      retryAfterMs: { canary: 3250 },
    });
    const slid = at(s.state, { kind: 'lease', requests: { canary: 1 } }, 6250);
    assert.deepEqual(slid.reply, { grants: { canary: 1 }, mode: 'armed' });
    assert.deepEqual(slid.state.capHolds, {});
    assert.deepEqual(acts(slid), []);
  });

  test("a fleet cap holds every agent's runs, and an agent whose policy refuses over its cap is paged as refused", () => {
    const p = policy({ caps: { fleet: [{ windowMs: 60_000, wakes: 1, rationale: 'test' }], agents: {} }, overCap: { deps: 'refuse' } });
    const first = at(fresh(p), { kind: 'lease', requests: { canary: 1 } }, 0);
    assert.deepEqual(first.reply.grants, { canary: 1 });
    const s = at(first.state, { kind: 'lease', requests: { deps: 1 } }, 10);
    assert.deepEqual(s.reply.grants, { deps: 0 });
    assert.equal(s.state.capHolds.deps?.scope, '*');
    const [page] = acts(s) as [Extract<Action, { kind: 'page' }>];
    assert.equal(page.page.summary, 'wakegate: the fleet is over its cap (1 wakes per 60 s); wakes of deps are refused until the window slides.');
  });

  test('of a fleet and an agent cap, the tighter one holds', () => {
    const p = policy({
      caps: { fleet: [{ windowMs: 60_000, wakes: 10, rationale: 'test' }], agents: { canary: [{ windowMs: 60_000, wakes: 1, rationale: 'test' }] } },
    });
    const s = at(fresh(p), { kind: 'lease', requests: { canary: 3 } }, 0);
    assert.deepEqual(s.reply.grants, { canary: 1 });
    assert.equal(s.state.capHolds.canary?.scope, 'canary');
    const counters = statusOf(s.state, T0)
      .counters.filter((c) => c.name === 'runs started')
      .map((c) => [c.scope, c.value, c.limit]);
    assert.deepEqual(counters, [
      ['*', 1, 10],
      ['canary', 1, 1],
      // A policy naming no shadow caps has the default ones (src/core/caps.ts): live shadows are never uncapped.
      ['~shadow', 0, 500],
    ]);
  });

  test('live shadows draw from the shadow caps only: refused past them with no hold or page, their spend and failures never production’s', () => {
    const p = policy({
      caps: {
        fleet: [{ windowMs: 60_000, wakes: 3, rationale: 'test' }],
        agents: {},
        shadow: [{ windowMs: 60_000, wakes: 2, costUsd: 1, rationale: 'test' }],
      },
    });
    const shadows = at(fresh(p), { kind: 'lease', requests: { 'deps/shadow': 3 } }, 0);
    assert.deepEqual(shadows.reply.grants, { 'deps/shadow': 2 });
    assert.deepEqual(shadows.state.capHolds, {}, 'a shadow over its cap is not held');
    assert.deepEqual(acts(shadows), [], 'nor paged');
    assert.deepEqual(memoWithoutHash(shadows.state).capsFull, []);
    // The fleet's cap is whole: production takes all three permits.
    assert.deepEqual(at(shadows.state, { kind: 'lease', requests: { deps: 3 } }, 10).reply.grants, { deps: 3 });
    // Failing shadows spend against the shadow cap and trip nothing (the error rate is production's).
    const failing = Array.from({ length: 6 }, (_, i) => closure('deps/shadow', 'failed', 1000 + i, { costUsd: 0.25 }));
    const seen = observed(shadows.state, 2000, failing);
    assert.equal(seen.state.mode, 'armed');
    assert.deepEqual(
      statusOf(seen.state, T0 + 2000)
        .counters.filter((c) => c.scope === '~shadow')
        .map((c) => [c.name, c.value, c.limit]),
      [
        ['runs started', 2, 2],
        ['spend USD', 1.5, 1],
      ],
    );
    assert.deepEqual(
      at(seen.state, { kind: 'lease', requests: { 'deps/shadow': 1 } }, 61_500).reply.grants,
      { 'deps/shadow': 0 },
      'the permits slid, the spend not yet',
    );
  });

  test('a spend cap holds runs once the closed runs in its window spent it, until that spend slides out', () => {
    const m = fresh(policy({ caps: capsFor('deps', { windowMs: 60_000, costUsd: 1 }) }));
    assert.deepEqual(at(m, { kind: 'lease', requests: { deps: 1 } }, 0).reply.grants, { deps: 1 }, 'nothing spent yet');
    const spent = observed(m, 2000, [closure('deps', 'success', 1000, { costUsd: 1.5 })]);
    const held = at(spent.state, { kind: 'lease', requests: { deps: 1 } }, 2000);
    // The spend sits in the bucket of second 1: it leaves the window at 1 s + 1 s + 60 s.
    assert.deepEqual(held.reply, { grants: { deps: 0 }, mode: 'armed', retryAfterMs: { deps: 60_000 } });
    assert.equal(held.state.capHolds.deps?.cap, '$1 per 60 s');
    assert.deepEqual(at(held.state, { kind: 'lease', requests: { deps: 1 } }, 62_000).reply.grants, { deps: 1 });
  });

  test('a token cap holds runs likewise', () => {
    const m = fresh(policy({ caps: capsFor('deps', { windowMs: 60_000, tokens: 1000 }) }));
    const under = observed(m, 2000, [closure('deps', 'success', 1000, { tokens: 999 })]);
    assert.deepEqual(at(under.state, { kind: 'lease', requests: { deps: 1 } }, 2000).reply.grants, { deps: 1 });
    const over = observed(under.state, 3000, [closure('deps', 'success', 2500, { tokens: 1 })]);
    const held = at(over.state, { kind: 'lease', requests: { deps: 1 } }, 3000);
    assert.deepEqual(held.reply.grants, { deps: 0 });
    assert.equal(held.state.capHolds.deps?.cap, '1000 tokens per 60 s');
  });

  test("a steady load over a cap pages once per the cap's window, not at every slide", () => {
    let m = fresh(policy({ caps: capsFor('canary', { windowMs: 6000, wakes: 2 }) }));
    const lease = (ms: number) => {
      const s = at(m, { kind: 'lease', requests: { canary: 1 } }, ms);
      m = s.state;
      return { granted: s.reply.grants.canary, pages: acts(s) as Extract<Action, { kind: 'page' }>[] };
    };
    lease(0);
    lease(3000);
    const episode1 = lease(3000);
    assert.deepEqual([episode1.granted, episode1.pages.map((p) => p.page.dedupKey)], [0, [`wakegate/${SELF}/cap-1`]]);
    assert.equal(lease(6250).granted, 1, 'the first permit slid: the hold ends');
    assert.deepEqual(m.capHolds, {});
    const episode2 = lease(6250);
    assert.deepEqual([episode2.granted, episode2.pages], [0, []]);
    assert.deepEqual(m.capHolds.canary?.paged, { dedupKey: `wakegate/${SELF}/cap-1`, status: `already paged at ${iso(3000)}, within the cap's window` });
    // The cap's window since the page has passed: the next episode pages again.
    assert.equal(lease(9250).granted, 1);
    const episode3 = lease(9250);
    assert.deepEqual(
      episode3.pages.map((p) => p.page.dedupKey),
      [`wakegate/${SELF}/cap-3`],
    );
  });

  test("a cap page that never got through does not stand for the cap's window: the next episode pages", () => {
    let m = fresh(policy({ caps: capsFor('canary', { windowMs: 6000, wakes: 1 }) }));
    m = at(m, { kind: 'lease', requests: { canary: 1 } }, 0).state;
    const over = at(m, { kind: 'lease', requests: { canary: 1 } }, 100);
    const [page] = acts(over) as [Extract<Action, { kind: 'page' }>];
    const ended = at(over.state, { kind: 'lease', requests: { canary: 1 } }, 6250);
    assert.deepEqual(ended.state.capHolds, {});
    const { kind: _kind, ...pageAction } = page;
    const refused = at(ended.state, { kind: 'paged', page: pageAction, outcome: { error: 'invalid routing key' } }, 6300);
    assert.equal(refused.state.pagesDue, undefined, 'not sent again: its hold has ended');
    assert.deepEqual(refused.state.capPages, {});
    const next = at(refused.state, { kind: 'lease', requests: { canary: 1 } }, 6400);
    assert.deepEqual(
      (acts(next) as Extract<Action, { kind: 'page' }>[]).map((p) => p.page.dedupKey),
      [`wakegate/${SELF}/cap-2`],
    );
  });
});

describe('status for the page', () => {
  test("the status query carries each counter's window bucket by bucket and the wakes per minute; an update's answer does not", () => {
    const p = policy({
      storm: { fleetPerMinute: 100, agentPerMinute: 50, rationale: 'test' },
      caps: { fleet: [{ windowMs: 60_000, wakes: 10, rationale: 'test' }], agents: { canary: [{ windowMs: 3_600_000, costUsd: 5, rationale: 'test' }] } },
    });
    let m = at(fresh(p), { kind: 'wakes', counts: { canary: 3 } }, 0).state;
    m = at(m, { kind: 'wakes', counts: { canary: 2, deps: 4 } }, 65_000).state;
    m = at(m, { kind: 'lease', requests: { canary: 2 } }, 70_000).state;
    m = observed(m, 71_000, [closure('canary', 'success', 70_500, { costUsd: 0.25 })]).state;
    const status = statusOf(m, T0 + 72_000, { charts: true });
    assert.equal(status.atMs, T0 + 72_000);
    const counter = (name: string, scope: string) => status.counters.find((c) => c.name === name && c.scope === scope)!;
    // The storm's minute slid past the first three wakes: 6 count, all in the bucket of 65 s.
    assert.deepEqual(
      { value: counter('wakes per minute', '*').value, buckets: counter('wakes per minute', '*').buckets },
      { value: 6, buckets: { bucketMs: 1000, values: [[T0 + 65_000, 6]] } },
    );
    assert.deepEqual(counter('wakes per minute', 'deps').buckets, { bucketMs: 1000, values: [[T0 + 65_000, 4]] });
    assert.deepEqual(counter('runs started', '*').buckets, { bucketMs: 1000, values: [[T0 + 70_000, 2]] });
    assert.deepEqual(counter('spend USD', 'canary').buckets, { bucketMs: 60_000, values: [[T0 + 60_000, 0.25]] });
    assert.equal(counter('spend USD', 'canary').value, 0.25);
    assert.equal(status.counters.find((c) => c.name.startsWith('error rate'))!.buckets, undefined, 'a share has no buckets to draw');
    // Ten calendar minutes, the current one (from 60 s) last; zero where nothing came.
    const minutes = (scope: string) => status.wakesPerMinute![scope]!;
    assert.deepEqual(
      minutes('*').map(([start]) => start - T0),
      Array.from({ length: 10 }, (_, i) => (i - 8) * 60_000),
    );
    assert.deepEqual(
      Object.fromEntries(
        Object.keys(status.wakesPerMinute!).map((scope) => [
          scope,
          minutes(scope)
            .slice(-2)
            .map(([, n]) => n),
        ]),
      ),
      { '*': [3, 6], canary: [3, 2], deps: [0, 4] },
    );
    assert.equal(
      minutes('*').reduce((sum, [, n]) => sum + n, 0),
      9,
    );
    // What an update answers (kept in the history) and what a trip records carry none of it.
    const plain = statusOf(m, T0 + 72_000);
    assert.equal(plain.atMs, undefined);
    assert.equal(plain.wakesPerMinute, undefined);
    assert.ok(plain.counters.every((c) => c.buckets === undefined));
  });

  test('the wakes per minute keep ten minutes: older minutes slide out of the status, and of the state', () => {
    const m = at(fresh(), { kind: 'wakes', counts: { canary: 2 } }, 0).state;
    // The wakes' 10 s bucket counts until the window has slid wholly past it.
    const later = at(m, { kind: 'tick' }, 10 * 60_000 + 10_000).state;
    assert.deepEqual(
      statusOf(m, T0 + 9 * 60_000, { charts: true }).wakesPerMinute!['*']!.map(([, n]) => n),
      [2, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    assert.deepEqual(statusOf(later, T0 + 10 * 60_000 + 10_000, { charts: true }).wakesPerMinute, {
      '*': Array.from({ length: 10 }, (_, i) => [T0 + (i + 1) * 60_000, 0]),
    });
    assert.equal(later.series['wakes:*'], undefined);
  });
});

describe("a person's reset, release and discard", () => {
  test('a reset needs a tripped breaker, a name and a reason', () => {
    const m = fresh();
    assert.equal(refusal(m, { kind: 'reset', who: 'dana', reason: 'x' }), 'the breaker is armed: nothing to reset');
    const tripped = stormed().state;
    assert.equal(refusal(tripped, { kind: 'reset', who: ' ', reason: 'x' }), "a person's action needs a name (who) and a reason");
    assert.equal(refusal(tripped, { kind: 'reset', who: 'dana', reason: '' }), "a person's action needs a name (who) and a reason");
    assert.equal(refusal(tripped, { kind: 'reset', who: 'dana', reason: 'fixed' }), undefined);
    assert.equal(refusal(m, { kind: 'lease' } as Input), 'lease needs requests');
  });

  test('a reset arms the breaker and is recorded; storm and error counts start afresh, spend and permits stay; held wakes stay held', () => {
    const p = policy({ caps: capsFor('canary', { windowMs: 60_000, wakes: 100 }) });
    let m = at(fresh(p), { kind: 'lease', requests: { canary: 1 } }, 0).state;
    m = observed(m, 2000, [closure('canary', 'failed', 1000)]).state;
    m = at(m, { kind: 'wakes', counts: { canary: 11 } }, 2000).state;
    assert.equal(m.mode, 'halted');
    const s = at(m, { kind: 'reset', who: 'dana', reason: 'the upstream loop is fixed' }, 3000);
    assert.equal(s.state.mode, 'armed');
    assert.equal(s.state.trip, undefined);
    assert.equal(s.state.armedSinceMs, T0 + 3000);
    assert.deepEqual(s.state.resets, [{ tripId: 1, who: 'dana', reason: 'the upstream loop is fixed', at: iso(3000) }]);
    // The wakes per minute stay: they are what status shows of the storm, not what the breaker counts.
    assert.deepEqual(Object.keys(s.state.series).sort(), ['permits:canary:60000', 'reason:failed', 'wakes:*', 'wakes:canary']);
    assert.equal(s.reply.mode, 'armed');
    assert.deepEqual(s.reply.resets, s.state.resets);
    assert.deepEqual(memoWithoutHash(s.state), { mode: 'armed', capsFull: [], releases: [], armedSinceMs: T0 + 3000 });
    assert.deepEqual(kinds(s), [], 'a reset alone releases nothing');
    // The storm that tripped it no longer counts: ten more wakes in the same minute are under the threshold.
    assert.equal(at(s.state, { kind: 'wakes', counts: { canary: 10 } }, 4000).state.mode, 'armed');
  });

  test('a release needs the breaker reset first; a discard does not; each is recorded and nudges the held runs', () => {
    const tripped = stormed().state;
    assert.equal(
      refusal(tripped, { kind: 'release', who: 'dana', reason: 'too early', action: 'release' }),
      'the breaker is halted (trip #1: 11 wakes in the last minute, over the fleet threshold of 10): reset it first (wakegate supervisor reset --who --reason), then release',
    );
    assert.equal(refusal(tripped, { kind: 'release', who: 'dana', reason: 'x', action: 'keep' } as unknown as Input), 'action is release or discard');
    assert.equal(refusal(tripped, { kind: 'release', who: 'sam', reason: 'stale by now', action: 'discard' }), undefined);

    const discard = at(tripped, { kind: 'release', who: 'sam', reason: 'stale by now', action: 'discard' }, 1000);
    assert.deepEqual(discard.reply, { id: 1, action: 'discard', who: 'sam', reason: 'stale by now', at: iso(1000), atMs: T0 + 1000 });
    assert.deepEqual(acts(discard), [{ kind: 'nudge' }]);

    const armed = at(discard.state, { kind: 'reset', who: 'dana', reason: 'fixed' }, 2000).state;
    assert.equal(refusal(armed, { kind: 'release', who: 'dana', reason: 'run them', action: 'release', agent: 'canary' }), undefined);
    const released = at(armed, { kind: 'release', who: 'dana', reason: 'run them', action: 'release', agent: 'canary' }, 3000);
    assert.deepEqual(released.reply, { id: 2, action: 'release', agent: 'canary', who: 'dana', reason: 'run them', at: iso(3000), atMs: T0 + 3000 });
    assert.deepEqual(acts(released), [{ kind: 'nudge', agent: 'canary' }]);
    assert.deepEqual(memoWithoutHash(released.state).releases, [discard.reply, released.reply]);
  });

  test('the last 20 releases are kept', () => {
    let m = fresh();
    for (let i = 0; i < 25; i++) m = at(m, { kind: 'release', who: 'dana', reason: `r${i}`, action: 'discard' }, i).state;
    assert.deepEqual(
      m.releases.map((r) => r.id),
      Array.from({ length: 20 }, (_, i) => i + 6),
    );
  });
});

describe('halt and drain', () => {
  test('a halt stops every live run and holds every wake; it pages nobody (a person did it)', () => {
    const s = at(fresh(policy({ onTrip: { deps: 'cancel' } })), { kind: 'halt', who: 'sam', reason: 'provider is degraded', drain: false }, 0);
    assert.equal(s.state.mode, 'halted');
    assert.deepEqual(
      { kind: s.state.trip?.kind, reason: s.state.trip?.reason, by: s.state.trip?.by },
      { kind: 'halt', reason: 'halted by sam: provider is degraded', by: { who: 'sam', reason: 'provider is degraded' } },
    );
    assert.deepEqual(acts(s), [{ kind: 'stop', who: 'sam', reason: 'halted by sam: provider is degraded' }]);
    assert.equal(s.reply.mode, 'halted');
    // Halted again: the same trip, and the live runs stopped once more.
    const again = at(s.state, { kind: 'halt', who: 'kim', reason: 'still bad', drain: false }, 1000);
    assert.equal(again.state.trip?.id, 1);
    assert.deepEqual(acts(again), [{ kind: 'stop', who: 'kim', reason: 'halted by kim: still bad' }]);
    assert.equal(refusal(s.state, { kind: 'halt', who: '', reason: 'x', drain: false }), "a person's action needs a name (who) and a reason");
  });

  test('a drain lets live runs finish and holds new wakes; a halt during it stops them after all', () => {
    const s = at(fresh(), { kind: 'halt', who: 'sam', reason: 'deploy', drain: true }, 0);
    assert.equal(s.state.mode, 'draining');
    assert.equal(s.state.trip?.kind, 'drain');
    assert.equal(s.state.trip?.reason, 'drained by sam: deploy');
    assert.deepEqual(acts(s), []);
    assert.deepEqual(at(s.state, { kind: 'lease', requests: { canary: 1 } }, 0).reply, { grants: { canary: 0 }, mode: 'draining' });
    assert.deepEqual(acts(at(s.state, { kind: 'halt', who: 'sam', reason: 'again', drain: true }, 500)), [], 'a second drain does nothing');
    const halted = at(s.state, { kind: 'halt', who: 'sam', reason: 'it hangs', drain: false }, 1000);
    assert.equal(halted.state.mode, 'halted');
    assert.equal(halted.state.trip?.kind, 'drain');
    assert.deepEqual(acts(halted), [{ kind: 'stop', who: 'sam', reason: 'halted by sam: it hangs' }]);
  });

  test('a storm during a drain turns it into a halt: it pages, and stops the agents that cancel on a trip', () => {
    const draining = at(fresh(policy({ onTrip: { canary: 'cancel' } })), { kind: 'halt', who: 'sam', reason: 'deploy', drain: true }, 0).state;
    const s = at(draining, { kind: 'wakes', counts: { canary: 11 } }, 1000);
    assert.equal(s.state.mode, 'halted');
    assert.deepEqual([s.state.trip?.id, s.state.trip?.kind], [2, 'storm']);
    assert.equal(s.state.trip?.reason, '11 wakes in the last minute, over the fleet threshold of 10 (during trip #1, a drain: now halted)');
    assert.deepEqual(kinds(s), ['page', 'stop']);
    assert.deepEqual(acts(s)[1], { kind: 'stop', agents: ['canary'], who: 'supervisor', reason: `trip #2: ${s.state.trip?.reason}` });
  });

  test('an error rate during a drain turns it into a halt too', () => {
    const draining = at(fresh(), { kind: 'halt', who: 'sam', reason: 'deploy', drain: true }, 0).state;
    const s = observed(
      draining,
      5000,
      [1, 2, 3, 4].map((i) => closure('canary', 'failed', 1000 + i)),
    );
    assert.deepEqual([s.state.mode, s.state.trip?.kind], ['halted', 'error_rate']);
    assert.match(s.state.trip!.reason, /\(during trip #1, a drain: now halted\)$/);
    assert.deepEqual(kinds(s), ['page']);
  });
});

describe('pages that must land', () => {
  const tripPage = (s: { actions: Action[] }): PageAction => {
    const { kind: _kind, ...page } = acts(s).find((a) => a.kind === 'page') as Extract<Action, { kind: 'page' }>;
    return page;
  };

  test('a refused page is sent again while its trip stands, at a doubling backoff, until it lands; status says when', () => {
    const tripped = stormed(policy({ pageResendMs: 1000 }));
    const refused = at(tripped.state, { kind: 'paged', page: tripPage(tripped), outcome: { error: 'the pager refused the event' } }, 500);
    assert.deepEqual(refused.state.trip?.page, { error: 'the pager refused the event', resendAt: iso(1500), sends: 1 });
    assert.deepEqual(refused.state.trips[0]?.page, refused.state.trip?.page);
    assert.deepEqual(refused.actions, [
      {
        kind: 'log',
        level: 'error',
        message: 'supervisor could not page',
        attrs: { supervisorId: SELF, dedupKey: `wakegate/${SELF}/trip-1`, err: 'the pager refused the event' },
      },
    ]);
    assert.deepEqual(
      acts(at(refused.state, { kind: 'tick' }, 1400)).filter((a) => a.kind === 'page'),
      [],
    );

    const due = at(refused.state, { kind: 'tick' }, 1500);
    const resend = tripPage(due);
    assert.equal(resend.failedSends, 1);
    assert.equal(due.state.pagesDue, undefined);
    const refusedAgain = at(due.state, { kind: 'paged', page: resend, outcome: { error: 'the pager refused the event' } }, 1600);
    assert.deepEqual(refusedAgain.state.trip?.page, { error: 'the pager refused the event', resendAt: iso(3600), sends: 2 });
    const thirdDue = at(refusedAgain.state, { kind: 'tick' }, 3600);
    const third = tripPage(thirdDue);
    assert.equal(third.failedSends, 2);
    const landed = at(thirdDue.state, { kind: 'paged', page: third, outcome: { dedupKey: `wakegate/${SELF}/trip-1`, status: 'success' } }, 3700);
    assert.deepEqual(landed.state.trip?.page, { dedupKey: `wakegate/${SELF}/trip-1`, status: 'success', at: iso(3700), sends: 3 });
    assert.equal(landed.state.pagesDue, undefined);
  });

  test('the backoff stops doubling at an hour', () => {
    const tripped = stormed(policy({ pageResendMs: 5 * 60_000 }));
    const s = at(tripped.state, { kind: 'paged', page: { ...tripPage(tripped), failedSends: 9 }, outcome: { error: 'down' } }, 0);
    assert.deepEqual(
      s.state.pagesDue?.map((d) => d.dueMs),
      [T0 + 60 * 60_000],
    );
  });

  test('a refused page is no longer sent once a person resets its trip', () => {
    const tripped = stormed(policy({ pageResendMs: 1000 }));
    const refused = at(tripped.state, { kind: 'paged', page: tripPage(tripped), outcome: { error: 'down' } }, 100);
    const reset = at(refused.state, { kind: 'reset', who: 'sam', reason: 'the pager key is being fixed' }, 200);
    const tick = at(reset.state, { kind: 'tick' }, 5000);
    assert.deepEqual(
      acts(tick).filter((a) => a.kind === 'page'),
      [],
    );
    assert.equal(tick.state.pagesDue, undefined);
  });

  test("a cap's page that failed is sent again while the hold lasts, and the hold shows the failure", () => {
    const over = at(
      fresh(policy({ caps: capsFor('canary', { windowMs: 60_000, wakes: 0 }), pageResendMs: 1000 })),
      { kind: 'lease', requests: { canary: 1 } },
      0,
    );
    const s = at(over.state, { kind: 'paged', page: tripPage(over), outcome: { error: 'timeout' } }, 100);
    assert.deepEqual(s.state.capHolds.canary?.paged, { error: 'timeout', resendAt: iso(1100), sends: 1 });
    assert.equal(tripPages(at(s.state, { kind: 'tick' }, 1100)), 1);
  });
});

describe('stops of live runs that must land', () => {
  const halted = () => at(fresh(), { kind: 'halt', who: 'ops', reason: 'stop everything', drain: false }, 0);
  const stopOf = (s: { actions: Action[] }) => {
    const { kind: _kind, ...stop } = acts(s).find((a) => a.kind === 'stop') as Extract<Action, { kind: 'stop' }>;
    return stop;
  };
  const away = { message: 'the frontend is away', unavailable: false };

  test('a stop that failed is made again at a doubling backoff; one that landed is swept once more 3 s later', () => {
    const h = halted();
    const failed = at(h.state, { kind: 'stopped', stop: stopOf(h), failed: away }, 100);
    assert.deepEqual(failed.state.stopsDue, [{ dueMs: T0 + 1100, stop: { who: 'ops', reason: 'halted by ops: stop everything', tripId: 1, attempt: 1 } }]);
    assert.deepEqual(failed.state.visibilityError, { at: iso(100), message: 'could not stop live runs: the frontend is away' });
    assert.equal(failed.actions.filter((a) => a.kind === 'log').length, 1);

    const due = at(failed.state, { kind: 'tick' }, 1100);
    const retry = stopOf(due);
    assert.equal(retry.attempt, 1);
    const failedAgain = at(due.state, { kind: 'stopped', stop: retry, failed: away }, 1200);
    assert.deepEqual(
      failedAgain.state.stopsDue?.map((d) => [d.dueMs, d.stop.attempt]),
      [[T0 + 3200, 2]],
    );
    assert.deepEqual(failedAgain.actions, [], 'the same failure is logged once');

    const landed = at(at(failedAgain.state, { kind: 'tick' }, 3200).state, { kind: 'stopped', stop: { ...retry, attempt: 2 } }, 3300);
    assert.equal(landed.state.visibilityError, undefined, 'cleared once the stop landed');
    assert.deepEqual(landed.state.stopsDue, [
      { dueMs: T0 + 6300, stop: { who: 'ops', reason: 'halted by ops: stop everything', tripId: 1, attempt: 0, sweep: true } },
    ]);
    const sweep = at(landed.state, { kind: 'tick' }, 6300);
    assert.equal(stopOf(sweep).sweep, true);
    const swept = at(sweep.state, { kind: 'stopped', stop: stopOf(sweep) }, 6400);
    assert.equal(swept.state.stopsDue, undefined, 'one sweep, no more');
  });

  test('a reset drops the stops its trip asked for; a server with no visibility API is not asked again', () => {
    const h = halted();
    const failed = at(h.state, { kind: 'stopped', stop: stopOf(h), failed: away }, 100);
    const reset = at(failed.state, { kind: 'reset', who: 'ops', reason: 'fine' }, 200);
    const tick = at(reset.state, { kind: 'tick' }, 1100);
    assert.deepEqual(
      acts(tick).filter((a) => a.kind === 'stop'),
      [],
    );
    assert.equal(tick.state.stopsDue, undefined);

    const blind = at(h.state, { kind: 'stopped', stop: stopOf(h), failed: { message: 'no visibility API', unavailable: true } }, 100);
    assert.equal(blind.state.stopsDue, undefined);
    assert.equal(blind.state.visibilityError?.unavailable, true);
  });
});

describe('watching closed runs', () => {
  test('a new supervisor watches at once from the last error-rate window; one watch at a time; a cut-short watch is followed at once, reading on from where it stopped', () => {
    const m = fresh();
    assert.equal(m.observedToMs, T0 - 60_000);
    const first = at(m, { kind: 'tick' }, 0);
    const [ask] = acts(first) as [Extract<Action, { kind: 'observe' }>];
    assert.equal(ask.kind, 'observe');
    assert.deepEqual({ fromMs: ask.fromMs, limit: ask.limit }, { fromMs: T0 - 60_000, limit: 2000 });
    assert.deepEqual(
      { ...ask.watch, trip: undefined, spend: undefined },
      { everyMs: 500, quietMs: MIN_WATCH_QUIET_MS, activeMs: ACTIVE_AFTER_MS, maxMs: WATCH_MAX_MS, quietUntilMs: 0, trip: undefined, spend: undefined },
    );
    assert.deepEqual(ask.watch.spend?.rooms, { 'usd:~shadow:86400000': 5, 'tokens:~shadow:86400000': 2_000_000 }, 'the default shadow caps only');
    assert.deepEqual(ask.watch.trip, { reasons: ['failed', 'escalated'], runsToTrip: 4 }, 'a failure could trip the error rate once minRuns are read');
    assert.equal(first.state.observing, true);
    assert.equal(nextWakeMs(first.state, T0), undefined, 'nothing to come round for while it watches');
    assert.deepEqual(acts(at(first.state, { kind: 'wakes', counts: { canary: 1 } }, 100)), [], 'never a second watch beside the first');
    const cut = at(first.state, watched([closure('canary', 'success', -30_000)], 100, { truncated: true, settled: false, cut: 'limit' }), 100);
    assert.equal(cut.state.observedToMs, T0 - 30_000, 'truncated: on from the last closure read');
    assert.equal(cut.state.lastObservedAt, iso(100));
    assert.equal(cut.state.observing, false);
    const next = acts(at(cut.state, { kind: 'tick' }, 100)) as Extract<Action, { kind: 'observe' }>[];
    assert.deepEqual(
      next.map((a) => a.fromMs),
      [T0 - 30_000],
      'the next watch at once',
    );
  });

  test('a settled watch leaves the fleet idle: the next read five minutes on, or at once when a wake, lease or release comes after what it saw', () => {
    const asked = at(fresh(), { kind: 'tick' }, 0).state;
    const idle = at(asked, watched([], 20_000), 20_000).state;
    assert.equal(idle.watchedToMs, T0 + 19_000);
    assert.equal(nextWakeMs(idle, T0 + 20_000), T0 + 19_000 + 1000 + IDLE_OBSERVE_MS, 'idle: five minutes after the last read');
    assert.deepEqual(acts(at(idle, { kind: 'tick' }, 60_000)), []);
    // A wake the gate admitted before what the watch saw changes nothing: its run was seen.
    const seen = at(idle, { kind: 'wakes', counts: { canary: 1 }, lastAtMs: T0 + 15_000 }, 25_000).state;
    assert.equal(nextWakeMs(seen, T0 + 25_000), T0 + 20_000 + IDLE_OBSERVE_MS, 'counts sent late of wakes already seen: still idle');
    for (const [what, input] of [
      ['a wake', { kind: 'wakes', counts: { canary: 1 } }],
      ['a lease', { kind: 'lease', requests: { canary: 1 } }],
      ['a release', { kind: 'release', who: 'sam', reason: 'go', action: 'release' }],
    ] as const) {
      const woke = at(idle, input as Input, 25_000);
      assert.equal(nextWakeMs(woke.state, T0 + 25_000), T0 + 20_000, `${what}: a watch at once`);
      assert.equal(acts(at(woke.state, { kind: 'tick' }, 25_000)).filter((a) => a.kind === 'observe').length, 1, what);
    }
  });

  test("a watch is told what would change a decision now: how many more runs could trip the error rate (none while halted), each spend cap's room; and until when a leased block may start runs", () => {
    const p = policy({
      caps: {
        fleet: [{ windowMs: 60_000, costUsd: 1, wakes: 100, rationale: 'test' }],
        agents: { canary: [{ windowMs: 60_000, tokens: 500, rationale: 'test' }] },
      },
    });
    let m = at(fresh(p), { kind: 'tick' }, 0).state;
    m = at(m, watched([closure('canary', 'success', -2000, { costUsd: 0.25, tokens: 100 }), closure('canary', 'success', -1500)], 0), 0).state;
    const leased = at(m, { kind: 'lease', requests: { canary: 1 }, prefetch: { canary: 5 }, holder: 'w1', holdMs: 30_000 }, 1000);
    const [ask] = acts(at(leased.state, { kind: 'tick' }, 1000)) as [Extract<Action, { kind: 'observe' }>];
    assert.deepEqual(ask.watch.trip, { reasons: ['failed', 'escalated'], runsToTrip: 2 }, 'two runs read of minRuns 4');
    assert.deepEqual(ask.watch.spend?.rooms, {
      'usd:*:60000': 0.75,
      'tokens:canary:60000': 400,
      'usd:~shadow:86400000': 5,
      'tokens:~shadow:86400000': 2_000_000,
    });
    assert.equal(ask.watch.quietUntilMs, T0 + 1000 + 30_000 + 5000, "the block's hold and its return's grace");
    const halted = at(leased.state, { kind: 'halt', who: 'sam', reason: 'stop', drain: false }, 1000).state;
    const [haltedAsk] = acts(at(halted, { kind: 'tick' }, 1000)).filter((a) => a.kind === 'observe') as [Extract<Action, { kind: 'observe' }>];
    assert.equal(haltedAsk.watch.trip, undefined, 'halted: no failure changes a decision');
  });

  test('a failed watch waits a round, doubling to a minute; without a visibility API the supervisor stops reading and waits for messages', () => {
    const first = at(at(fresh(), { kind: 'wakes', counts: { canary: 1 } }, 0).state, { kind: 'tick' }, 0);
    let m = at(first.state, { kind: 'observed', failed: { message: 'unreachable', unavailable: false } }, 10).state;
    assert.equal(m.visibilityError?.message, 'could not read closed runs: unreachable');
    assert.equal(nextWakeMs(m, T0 + 10), T0 + 500);
    const waits: number[] = [];
    let nowMs = 0;
    for (let i = 0; i < 9; i++) {
      const due = nextWakeMs(m, T0 + nowMs)! - T0;
      waits.push(due - nowMs);
      nowMs = due;
      m = at(at(m, { kind: 'tick' }, nowMs).state, { kind: 'observed', failed: { message: 'unreachable', unavailable: false } }, nowMs).state;
    }
    assert.deepEqual(waits, [500, 1000, 2000, 4000, 8000, 16_000, 32_000, MAX_QUIET_OBSERVE_MS, MAX_QUIET_OBSERVE_MS]);
    const back = at(at(m, { kind: 'tick' }, nowMs + 60_000).state, watched([], nowMs + 60_000), nowMs + 60_000).state;
    assert.equal(back.visibilityError, undefined, 'a watch that answers clears it');
    assert.equal(back.failedReads, undefined);
    const blind = at(first.state, { kind: 'observed', failed: { message: 'no visibility API', unavailable: true } }, 10);
    assert.equal(nextWakeMs(blind.state, T0 + 10), undefined);
    assert.deepEqual(acts(at(blind.state, { kind: 'wakes', counts: { canary: 1 } }, 5000)), []);
    assert.deepEqual(acts(at(blind.state, { kind: 'tick' }, 5000)), []);
  });
});

describe('when the loop comes round', () => {
  test('at the next due stop or page whether or not a watch is in flight, at the next watch due, else not until a message', () => {
    const asked = at(fresh(), { kind: 'tick' }, 0).state;
    const h = at(asked, { kind: 'halt', who: 'ops', reason: 'stop', drain: false }, 0);
    const { kind: _kind, ...stop } = acts(h).find((a) => a.kind === 'stop') as Extract<Action, { kind: 'stop' }>;
    const failed = at(h.state, { kind: 'stopped', stop, failed: { message: 'away', unavailable: false } }, 0).state;
    assert.equal(nextWakeMs(failed, T0), T0 + 1000, 'the stop retry (1 s), beside the watch in flight');
    const read = at(failed, watched([], 2000), 2000).state;
    assert.equal(nextWakeMs(read, T0 + 2000), T0 + 1000, 'the retry still comes, late as it is');
    const reset = at(read, { kind: 'reset', who: 'ops', reason: 'fine' }, 2000).state;
    assert.equal(nextWakeMs(reset, T0 + 2000), T0 + 2000 + IDLE_OBSERVE_MS, 'nothing due and idle: the idle read, five minutes after the last');
  });
});

describe('continuing as new', () => {
  test('pages still being sent are sent again from the next run while still wanted; the state carries over whole', () => {
    const tripped = stormed();
    const [page] = acts(tripped) as [Extract<Action, { kind: 'page' }>];
    const { kind: _kind, ...inFlight } = page;
    const s = at(tripped.state, { kind: 'continuing', inFlight: [inFlight] }, 2000);
    assert.deepEqual(s.state.pagesDue, [{ dueMs: T0 + 2000, page: inFlight }]);
    const next = continueWith(s.state);
    assert.deepEqual(Object.keys(next).sort(), ['policy', 'state', 'taskQueue']);
    assert.equal(next.state.lastActivityMs, s.state.lastActivityMs, 'the last activity goes with it');
    const resumed = start(next, T0 + 3000);
    assert.deepEqual({ ...resumed, lastObserveAttemptMs: 0 }, { ...s.state, lastObserveAttemptMs: 0 });
    assert.equal(tripPages(at(resumed, { kind: 'tick' }, 3000)), 1, 'the next run sends it');

    const reset = at(tripped.state, { kind: 'reset', who: 'sam', reason: 'fixed' }, 1000);
    assert.equal(at(reset.state, { kind: 'continuing', inFlight: [inFlight] }, 2000).state.pagesDue, undefined, 'a page for a reset trip is not sent again');
  });

  test('an idle fleet stays idle across continue-as-new: the next run does not count its own start as activity; a watch in flight is asked again', () => {
    const first = at(at(fresh(), { kind: 'wakes', counts: { canary: 1 } }, 0).state, { kind: 'tick' }, 0).state;
    const quiet = at(first, watched([], 2000), 2000).state;
    const later = 20 * 60_000;
    assert.equal(nextWakeMs(quiet, T0 + later), T0 + 2000 + IDLE_OBSERVE_MS, 'its idle read five minutes after the last');
    const resumed = start(continueWith(quiet), T0 + later);
    assert.equal(nextWakeMs(resumed, T0 + later), T0 + 2000 + IDLE_OBSERVE_MS, 'the next run is idle too');
    const fresher = start({ taskQueue: 'q', policy: policy() }, T0 + later);
    assert.ok(nextWakeMs(fresher, T0 + later)! <= T0 + later, 'a new supervisor reads at once');
    const asked = at(fresher, { kind: 'tick' }, later);
    assert.equal(acts(asked).filter((a) => a.kind === 'observe').length, 1);
    const read = at(asked.state, watched([], later), later).state;
    assert.equal(nextWakeMs(read, T0 + later), T0 + later + IDLE_OBSERVE_MS, 'its first watch settled with no wake: the next read five minutes on');
    // Continued as new with a watch in flight: its answer is lost, and the next run asks again.
    const watching = at(at(read, { kind: 'wakes', counts: { canary: 1 } }, later + 5).state, { kind: 'tick' }, later + 5).state;
    assert.equal(watching.observing, true);
    const next = start(continueWith(watching), T0 + later + 10);
    assert.equal(next.observing, false);
    assert.equal(acts(at(next, { kind: 'tick' }, later + 10)).filter((a) => a.kind === 'observe').length, 1, 'the next run watches at once');
  });
});

test('a step is pure: it leaves the state it was given as it was, and the same input at the same time gives the same step', () => {
  const m = stormed(policy({ caps: capsFor('canary', { windowMs: 60_000, wakes: 1 }) })).state;
  const before = JSON.stringify(m);
  const reset = at(m, { kind: 'reset', who: 'sam', reason: 'fixed' }, 1000);
  assert.equal(JSON.stringify(m), before);
  const afterReset = JSON.stringify(reset.state);
  const lease = at(reset.state, { kind: 'lease', requests: { canary: 2 } }, 1000);
  assert.equal(JSON.stringify(reset.state), afterReset);
  assert.equal(lease.reply.grants.canary, 1);
  assert.deepEqual(at(m, { kind: 'wakes', counts: { canary: 3 } }, 500), at(m, { kind: 'wakes', counts: { canary: 3 } }, 500));
});

describe('permits leased to processes in blocks', () => {
  const capped = (wakes: number, windowMs = 60_000) => policy({ caps: { fleet: [{ windowMs, wakes, rationale: 'test' }], agents: {} } });
  const runsStarted = (m: MachineState, ms: number) => statusOf(m, T0 + ms).counters.find((c) => c.name === 'runs started' && c.scope === '*')!.value;
  const ask = (m: MachineState, holder: string, want: number, ahead: number, ms: number, holdMs = 2000) =>
    at(m, { kind: 'lease', requests: { canary: want }, prefetch: { canary: ahead }, holder, holdMs }, ms);

  test('a block is counted at once, at the end of its hold: the runs waiting first, then a quarter of the room left, recorded for its holder', () => {
    const s = ask(fresh(capped(100)), 'p1', 2, 40, 0);
    assert.deepEqual(s.reply, { grants: { canary: 2 }, mode: 'armed', prefetched: { canary: 24 }, atMs: T0 });
    assert.equal(runsStarted(s.state, 0), 26, '2 for the runs waiting and 24 (a quarter of the 98 left) ahead of demand');
    assert.deepEqual(s.state.blocks, { p1: [{ agent: 'canary', atMs: T0, n: 24, untilMs: T0 + 2000 + 5000, countedAtMs: T0 + 2000 }] });
    assert.deepEqual(continueWith(s.state).state.blocks, s.state.blocks, 'blocks carry over a continue-as-new');
    // Asking for less ahead than the quarter gets what was asked; without a holder, nothing ahead.
    assert.deepEqual(ask(s.state, 'p2', 1, 3, 10).reply.prefetched, { canary: 3 });
    assert.deepEqual(at(s.state, { kind: 'lease', requests: { canary: 1 }, prefetch: { canary: 3 } }, 10).reply, { grants: { canary: 1 }, mode: 'armed' });
  });

  test('nothing ahead of demand for an agent whose waiting runs were not all granted, nor while halted; MAX_PREFETCH bounds a cap with no wake count', () => {
    const short = ask(fresh(capped(3)), 'p1', 5, 10, 0);
    assert.deepEqual(short.reply, { grants: { canary: 3 }, mode: 'armed' });
    assert.equal(short.state.blocks, undefined);
    const halted = ask(stormed(capped(100)).state, 'p1', 1, 10, 10);
    assert.deepEqual(halted.reply, { grants: { canary: 0 }, mode: 'halted' });
    const spendOnly = policy({ caps: { fleet: [{ windowMs: 60_000, costUsd: 5, rationale: 'test' }], agents: {} } });
    assert.deepEqual(ask(fresh(spendOnly), 'p1', 1, 500, 0).reply.prefetched, { canary: 64 });
  });

  test('never over the cap across several holders, however they ask: the runs waiting go first, prefetch shrinks as the room does', () => {
    let m = fresh(capped(40));
    let granted = 0;
    for (let i = 0; i < 60; i++) {
      const s = ask(m, `p${i % 3}`, 1 + (i % 4), 64, i * 50);
      granted += s.reply.grants.canary! + (s.reply.prefetched?.canary ?? 0);
      m = s.state;
      assert.ok(runsStarted(m, i * 50) <= 40, `over the cap at lease ${i}`);
    }
    assert.equal(granted, 40, 'exactly the cap is handed out in the window');
    assert.equal(runsStarted(m, 3000), 40);
    assert.equal(m.capHolds.canary?.scope, '*', 'the runs beyond it are held');
  });

  test('a return takes unused permits out of the window, up to what the block still holds; another holder or a duplicate takes nothing', () => {
    let m = ask(fresh(capped(100)), 'p1', 2, 40, 0).state;
    m = at(m, { kind: 'unused', holder: 'p2', blocks: [{ agent: 'canary', atMs: T0, n: 24 }] }, 2100).state;
    assert.equal(runsStarted(m, 2100), 26, "another holder cannot hand back p1's permits");
    m = at(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: T0, n: 20 }] }, 2100).state;
    assert.equal(runsStarted(m, 2100), 6);
    assert.deepEqual(
      m.blocks?.p1?.map((b) => b.n),
      [4],
    );
    m = at(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: T0, n: 20 }] }, 2200).state;
    assert.equal(runsStarted(m, 2200), 2, 'only the 4 the block still held');
    assert.equal(m.blocks, undefined, 'an emptied block is forgotten');
    m = at(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: T0, n: 20 }] }, 2300).state;
    assert.equal(runsStarted(m, 2300), 2, 'a duplicate return takes nothing');
  });

  test('a block not returned by its deadline (its process died) is forgotten and stays counted until the window slides it out', () => {
    let m = ask(fresh(capped(100)), 'p1', 2, 40, 0).state;
    m = at(m, { kind: 'tick' }, 7001).state;
    assert.equal(m.blocks, undefined);
    m = at(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: T0, n: 24 }] }, 7100).state;
    assert.equal(runsStarted(m, 7100), 26, 'a late return takes nothing: conservative');
    assert.equal(runsStarted(m, 61_000), 24, 'the block is counted at the end of its 2 s hold');
    assert.equal(runsStarted(m, 63_000), 0, 'the window (buckets of 1 s) slid past them');
  });

  test('a return that makes room nudges the runs held on that cap to re-check at once', () => {
    let m = ask(fresh(capped(8)), 'p1', 1, 64, 0).state;
    assert.deepEqual(
      m.blocks?.p1?.map((b) => b.n),
      [1],
      'a quarter of the 7 left',
    );
    const held = at(m, { kind: 'lease', requests: { deps: 7 } }, 100);
    assert.deepEqual(held.reply.grants, { deps: 6 });
    m = held.state;
    const back = at(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: T0, n: 1 }] }, 2100);
    assert.deepEqual(acts(back), [{ kind: 'nudge', agent: 'deps' }]);
    assert.deepEqual(at(back.state, { kind: 'lease', requests: { deps: 1 } }, 2200).reply.grants, { deps: 1 });
  });
});
