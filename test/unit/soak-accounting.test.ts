import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { account, beyondWakesByRule, stuckKeys, unseenAbsorbed, wakesByRule, type OutsideState, type RunSeen } from '../../tools/soak/accounting';
import type { CoalescerOffers, OfferSeen, RunGiven } from '../../tools/soak/temporal-records';
import type { Delivery } from '../../tools/soak/load';
import type { FaultRecord } from '../../tools/soak/faults';

/*
 * The soak's accounting (tools/soak/accounting.ts) judges the system from what the senders were told, the
 * runs Temporal holds and the effects at the stand-ins. Its rules are proven here on made-up inputs,
 * each finding both ways: a clean day reports nothing, and each defect is named by its event key.
 */

const T0 = Date.parse('2026-12-05T03:00:00Z');

function webhook(id: string, eventKey: string, wakes: { decision: string; runKey: string }[], status = 202, t = T0): Delivery {
  return {
    id,
    kind: 'webhook',
    what: 'campaigns',
    attempts: [{ t, ingress: 'http://127.0.0.1:1', status, retryAfter: null }],
    status,
    eventKey,
    wakes: wakes.map((w) => ({ agent: 'campaign-reporter', ...w })),
  };
}

function queued(id: string, eventKey: string): Delivery {
  return { id, kind: 'queue', what: 'incidents', attempts: [], status: 200, eventKey, coalescerIds: ['incident-triage#svc-q1'] };
}

function run(workflowId: string, absorbed: string[], extra: Partial<RunSeen> = {}): RunSeen {
  return { workflowId, agent: 'campaign-reporter', status: 'COMPLETED', terminalReason: 'success', wakeKey: 'c1', absorbed, skipped: [], ...extra };
}

const NOTHING_OUTSIDE: OutsideState = { exports: [], tickets: [], channel: [], pulls: [] };

function judge(over: { deliveries: Delivery[]; closed: RunSeen[]; open?: string[]; outside?: OutsideState; faults?: FaultRecord[] }) {
  return account({
    deliveries: over.deliveries,
    queueUnacked: 0,
    runs: { closed: over.closed, open: over.open ?? [] },
    outside: over.outside ?? { ...NOTHING_OUTSIDE, exports: [{ reference: 'r1', campaign: 'c1' }] },
    faults: over.faults ?? [],
  });
}

describe('soak accounting', () => {
  test('a clean day: every accepted event in one run, effects once, invalid input refused', () => {
    const a = judge({
      deliveries: [
        webhook('w1', 'e1', [{ decision: 'started', runKey: 'run-1' }]),
        webhook('w1-replay', 'e1', [{ decision: 'coalesced', runKey: 'run-1' }]),
        queued('q1', 'e2'),
        { id: 'bad', kind: 'invalid', what: 'bad signature', attempts: [], status: 401 },
      ],
      closed: [run('run-1', ['e1', 'e2'])],
    });
    assert.deepEqual(
      [a.lost, a.doubleAbsorbed, a.answersNamingTwoRuns, a.duplicateEffects, a.reconcileMismatch, a.stuckRuns, a.invalidAccepted],
      [[], [], [], [], [], [], []],
    );
    assert.equal(a.accepted, 3);
    assert.equal(a.runs, 1);
  });

  test('an accepted event no run took is lost, named by its key', () => {
    const a = judge({ deliveries: [webhook('w1', 'e1', [{ decision: 'started', runKey: 'run-1' }]), queued('q9', 'e9')], closed: [run('run-1', ['e1'])] });
    assert.deepEqual(a.lost, ['e9']);
  });

  test('a queue event skipped by a live run is recorded on that run, not lost', () => {
    // whileRunning `skip`: the coalescer answers `skipped` and the live run lists the event in `skipped`.
    const a = judge({ deliveries: [queued('q1', 'e1')], closed: [run('run-1', [], { skipped: ['e1'] })] });
    assert.deepEqual(a.lost, []);
  });

  test('an event decided stale is decided elsewhere, not lost', () => {
    const a = judge({ deliveries: [webhook('w1', 'e1', [{ decision: 'stale', runKey: 'c#1' }])], closed: [] });
    assert.deepEqual(a.lost, []);
  });

  test('an event taken by two runs of one agent, and deliveries told of two runs, are named', () => {
    const a = judge({
      deliveries: [webhook('w1', 'e1', [{ decision: 'started', runKey: 'run-1' }]), webhook('w2', 'e1', [{ decision: 'started', runKey: 'run-2' }])],
      closed: [run('run-1', ['e1']), run('run-2', ['e1'], { terminalReason: 'failed' })],
    });
    assert.deepEqual(a.doubleAbsorbed, ['campaign-reporter|e1 in run-1, run-2']);
    assert.deepEqual(a.answersNamingTwoRuns, ['campaign-reporter|e1: run-1, run-2']);
  });

  test('a keyed effect applied twice, and a reconcile effect not once per successful report', () => {
    const a = judge({
      deliveries: [webhook('w1', 'e1', [{ decision: 'started', runKey: 'run-1' }])],
      closed: [run('run-1', ['e1'])],
      outside: {
        exports: [
          { reference: 'r1', campaign: 'c1' },
          { reference: 'r2', campaign: 'c1' },
        ],
        tickets: [],
        channel: [{ idempotencyKey: 'k1' }, { idempotencyKey: 'k1' }],
        pulls: [],
      },
    });
    assert.deepEqual(a.duplicateEffects, ['channel post k1 x2']);
    assert.deepEqual(a.reconcileMismatch, ['c1: 1 successful reports, 2 exports']);
  });

  test('a run still open after the drain is stuck; accepted invalid input is named', () => {
    const a = judge({
      deliveries: [{ id: 'bad', kind: 'invalid', what: 'oversized body', attempts: [], status: 202 }],
      closed: [],
      open: ['run-7'],
      outside: NOTHING_OUTSIDE,
    });
    assert.deepEqual(a.stuckRuns, ['run-7']);
    assert.deepEqual(a.invalidAccepted, ['bad (oversized body): 202']);
  });

  test('a 5xx is explained only inside a restart window, and must carry Retry-After', () => {
    const restart: FaultRecord = { kind: 'temporal-restart', target: 'temporal', from: T0, to: T0 + 5_000 };
    const inWindow = webhook('w1', 'e1', [{ decision: 'started', runKey: 'run-1' }]);
    inWindow.attempts = [{ t: T0 + 2_000, ingress: 'i1', status: 503, retryAfter: '1' }, ...inWindow.attempts];
    const outside = webhook('w2', 'e2', [{ decision: 'started', runKey: 'run-2' }]);
    outside.attempts = [{ t: T0 + 120_000, ingress: 'i2', status: 500, retryAfter: null }, ...outside.attempts];
    const a = judge({ deliveries: [inWindow, outside], closed: [run('run-1', ['e1']), run('run-2', ['e2'])], faults: [restart] });
    assert.equal(a.fiveXx, 2);
    assert.deepEqual(a.unexplained5xx, [`w2 500 at ${new Date(T0 + 120_000).toISOString()} via i2`]);
    assert.deepEqual(a.fiveXxWithoutRetryAfter, ['w2 500']);
  });
});

describe('soak accounting: what operators leave behind, from Temporal’s records', () => {
  const offer = (eventKey: string, atMs: number, extra: Partial<OfferSeen> = {}): OfferSeen => ({ eventKey, source: 'notes', atMs, ...extra });
  const coalescer = (wakeKey: string, offers: OfferSeen[]): CoalescerOffers => ({ coalescerId: `soak-notes#${wakeKey}`, agent: 'soak-notes', offers });
  const notesRun = (workflowId: string, absorbed: string[], skipped: string[] = [], extra: Partial<RunSeen> = {}) =>
    run(workflowId, absorbed, { agent: 'soak-notes', skipped, ...extra });

  test('a wake key whose last accepted event a closed run absorbed (or recorded as skipped) is not stuck', () => {
    const keys = stuckKeys(
      [
        coalescer('t1', [offer('n1', 1, { decision: 'started' }), offer('n2', 2, { decision: 'steered' })]),
        coalescer('t2', [offer('n3', 3, { decision: 'started' }), offer('n4', 4, { decision: 'skipped' })]),
      ],
      [notesRun('soak-notes#t1@n1', ['n1', 'n2']), notesRun('soak-notes#t2@n3', ['n3'], ['n4'], { status: 'TERMINATED' })],
    );
    assert.deepEqual(keys, []);
  });

  test('a wake key whose last accepted event no closed run took is stuck, even when earlier ones were taken', () => {
    const keys = stuckKeys(
      [coalescer('t1', [offer('n1', 1, { decision: 'started' }), offer('n2', 2, { decision: 'steered' }), offer('n3', 3, { decision: 'coalesced' })])],
      [notesRun('soak-notes#t1@n1', ['n1', 'n2'])],
    );
    assert.equal(keys.length, 1);
    assert.match(keys[0]!, /^soak-notes#t1: n3 \(coalesced at /);
  });

  test('a last event skipped for a run open at the decision is decided, its record on the run or not; skipped for a closed run it is stuck', () => {
    const offers = [offer('n1', 1_000, { decision: 'started' }), offer('n2', 5_000, { decision: 'skipped', runKey: 'soak-notes#t1@n1' })];
    // The run closed after the skip, before the coalescer's record of it (a signal sent for several) reached the run.
    assert.deepEqual(stuckKeys([coalescer('t1', offers)], [notesRun('soak-notes#t1@n1', ['n1'], [], { closeMs: 5_200 })]), []);
    // The run had closed (terminated by hand) before the skip: the coalescer skipped for a dead run.
    const keys = stuckKeys([coalescer('t1', offers)], [notesRun('soak-notes#t1@n1', ['n1'], [], { status: 'TERMINATED', closeMs: 4_000 })]);
    assert.equal(keys.length, 1);
    assert.match(keys[0]!, /^soak-notes#t1: n2 \(skipped at /);
    // A skip naming a run that never closed (or none) is stuck too.
    assert.equal(stuckKeys([coalescer('t1', offers)], []).length, 1);
  });

  test('a last offer by signal is judged by the decision its offer by update got', () => {
    const run1 = notesRun('soak-notes#t1@n1', ['n1'], [], { closeMs: 5_200 });
    const skippedThenSignal = [
      offer('n1', 1_000, { decision: 'started' }),
      offer('n2', 5_000, { decision: 'skipped', runKey: 'soak-notes#t1@n1', offerId: 'o2' }),
      offer('n2', 6_000, { offerId: 'o2' }), // the gate's fallback signal, after the run closed
    ];
    assert.deepEqual(stuckKeys([coalescer('t1', skippedThenSignal)], [run1]), []);
    // The fallback signal stands where its update was answered: a later event no run took is still the last.
    const signalLast = [
      offer('n1', 1_000, { decision: 'started', offerId: 'o1' }),
      offer('n2', 2_000, { decision: 'coalesced', offerId: 'o2' }),
      offer('n1', 3_000, { offerId: 'o1' }),
    ];
    assert.equal(stuckKeys([coalescer('t1', signalLast)], [run1]).length, 1);
    // Another offer of the event (a recovery's, by signal, older than what came since) is not that update's: stale by version.
    const recovered = [
      offer('n1', 1_000, { decision: 'coalesced', version: 1, offerId: 'o1' }),
      offer('n2', 2_000, { decision: 'started', version: 2, offerId: 'o2', runKey: 'soak-notes#t1@n2' }),
      offer('n1', 3_000, { version: 1, offerId: 'recovered:n1' }),
    ];
    assert.deepEqual(stuckKeys([coalescer('t1', recovered)], [notesRun('soak-notes#t1@n2', ['n2'])]), []);
    // By signal only, never answered: judged as accepted, so not taken by any run it is stuck.
    assert.equal(stuckKeys([coalescer('t1', [offer('n1', 1_000, { decision: 'started' }), offer('n3', 6_000)])], [run1]).length, 1);
  });

  test('the last event is judged by the agent that took it: another agent’s run of the same event does not count', () => {
    const keys = stuckKeys([coalescer('t1', [offer('n1', 1, { decision: 'started' })])], [run('campaign-reporter#t1@n1', ['n1'])]);
    assert.equal(keys.length, 1);
  });

  test('stale and mismatch answers are passed over; so is an offer by signal older than one offered before it', () => {
    const taken = [notesRun('soak-notes#t1@n1', ['n1'])];
    // Answered stale or mismatch: nothing was to run for it, the one before is the last accepted.
    assert.deepEqual(stuckKeys([coalescer('t1', [offer('n1', 1, { decision: 'started' }), offer('n0', 2, { decision: 'stale' })])], taken), []);
    assert.deepEqual(stuckKeys([coalescer('t1', [offer('n1', 1, { decision: 'started' }), offer('n1', 2, { decision: 'mismatch' })])], taken), []);
    // By signal (no answer in history), with an older version than one before it from its source: stale by the coalescer's rule.
    const bySignal = [offer('n1', 1, { decision: 'started', version: 5 }), offer('n0', 2, { version: 4 })];
    assert.deepEqual(stuckKeys([coalescer('t1', bySignal)], taken), []);
    // A newer version by signal, or another source's older one, is accepted: not taken, the key is stuck.
    assert.equal(stuckKeys([coalescer('t1', [offer('n1', 1, { decision: 'started', version: 5 }), offer('n9', 2, { version: 6 })])], taken).length, 1);
    assert.equal(
      stuckKeys([coalescer('t1', [offer('n1', 1, { decision: 'started', version: 5 }), offer('n9', 2, { version: 1, source: 'other' })])], taken).length,
      1,
    );
  });

  test('a coalescer with no accepted event names nothing', () => {
    assert.deepEqual(stuckKeys([coalescer('t1', []), coalescer('t2', [offer('n0', 1, { decision: 'stale' })])], []), []);
  });

  const given = (workflowId: string, absorbed: string[] | undefined, texts: string[], extra: Partial<RunGiven> = {}): RunGiven => ({
    workflowId,
    agent: 'soak-notes',
    status: 'COMPLETED',
    terminalReason: 'success',
    ...(absorbed ? { absorbed } : {}),
    given: texts.join('\n'),
    modelTurns: texts.length,
    ...extra,
  });

  test('every absorbed event named in some model turn’s input was seen: none unseen', () => {
    const first = JSON.stringify({ event: { key: 'notes/a' }, payload: { notes: [{ noteKey: 'notes/a' }, { noteKey: 'notes/b' }] } });
    const steered = JSON.stringify({ newEvents: [{ key: 'notes/c', payload: { noteKey: 'notes/c' } }] });
    assert.deepEqual(unseenAbsorbed([given('r1', ['notes/a', 'notes/b', 'notes/c'], [first, steered])]), []);
  });

  test('an absorbed event no model turn was given is unseen, named with its run and how it ended', () => {
    const first = JSON.stringify({ payload: { notes: [{ noteKey: 'notes/a' }] } });
    const unseen = unseenAbsorbed([
      given('r1', ['notes/a', 'notes/b'], [first], { terminalReason: 'budget_exhausted' }),
      given('r2', ['notes/x'], [], { terminalReason: 'escalated' }),
    ]);
    assert.deepEqual(unseen, ['r1: notes/b (budget_exhausted, 1 model turns)', 'r2: notes/x (escalated, 0 model turns)']);
  });

  test('a run that ended cancelled (killed before its model ran) is not judged: the kill decided its events', () => {
    assert.deepEqual(unseenAbsorbed([given('r1', ['notes/x'], [], { terminalReason: 'cancelled' })]), []);
  });

  test('a key is matched whole: notes/1 is not seen because notes/10 was', () => {
    assert.equal(unseenAbsorbed([given('r1', ['notes/1'], [JSON.stringify({ key: 'notes/10' })])]).length, 1);
  });

  test('a run with no result (terminated, failed) lists nothing absorbed and is not judged', () => {
    assert.deepEqual(unseenAbsorbed([given('r1', undefined, [], { status: 'TERMINATED', terminalReason: undefined })]), []);
  });

  test('a run terminated by hand counts for lost, and a follow-up run taking its events again is no duplicate', () => {
    const deliveries = [webhook('w1', 'e1', [{ decision: 'started', runKey: 'c#k@e1' }])];
    const terminated = run('c#k@e1', ['e1'], { status: 'TERMINATED', terminalReason: 'terminated' });
    assert.deepEqual(judge({ deliveries, closed: [terminated] }).lost, [], 'taken by the terminated run: not lost');
    assert.deepEqual(judge({ deliveries, closed: [terminated, run('c#k@e1-next', ['e1'])] }).doubleAbsorbed, []);
    assert.equal(judge({ deliveries, closed: [run('c#k@e1', ['e1']), run('c#k@e1-next', ['e1'])] }).doubleAbsorbed.length, 1, 'two completed runs: twice');
  });

  test('an event redelivered after its coalescer closed may be taken by one more run per redelivery', () => {
    const closed = [run('c#k@e1', ['e1']), run('c#k@e1-again', ['e1'])];
    const deliveries = [webhook('w1', 'e1', [{ decision: 'started', runKey: 'c#k@e1' }])];
    assert.equal(judge({ deliveries, closed }).doubleAbsorbed.length, 1, 'without a redelivery: taken twice');
    const redelivered: FaultRecord = { kind: 'redeliver', target: 'c#k', from: T0, to: T0, eventKeys: ['e1'] };
    assert.deepEqual(judge({ deliveries, closed, faults: [redelivered] }).doubleAbsorbed, []);
    const thrice = [...closed, run('c#k@e1-third', ['e1'])];
    assert.equal(judge({ deliveries, closed: thrice, faults: [redelivered] }).doubleAbsorbed.length, 1, 'one redelivery allows one more run, not two');
  });
});

describe('wakes by rule: a delivery past the dedup horizon is a new wake', () => {
  const offers = (
    agent: string,
    list: { eventKey: string; atMs: number; decision?: 'started' | 'coalesced' | 'steered' | 'skipped'; duplicate?: boolean }[],
  ) => ({
    coalescerId: `${agent}#k`,
    agent,
    offers: list.map((o) => ({ source: 'notes', ...o })),
  });

  test('a fresh decision past the horizon counts; one within it, or a redelivery’s answer, does not', () => {
    const wakes = wakesByRule(
      [
        offers('notes', [
          { eventKey: 'e1', atMs: 0, decision: 'started' },
          { eventKey: 'e1', atMs: 5_000, decision: 'started', duplicate: true },
          { eventKey: 'e1', atMs: 26_000, decision: 'coalesced' },
          { eventKey: 'e2', atMs: 0, decision: 'steered' },
          { eventKey: 'e2', atMs: 10_000, decision: 'started' },
        ]),
      ],
      () => 20_000,
    );
    assert.deepEqual([wakes.get('notes|e1'), wakes.get('notes|e2')], [2, 1]);
    assert.deepEqual(beyondWakesByRule(['notes|e1 in r1, r2', 'notes|e2 in r3, r4', 'notes|e3 in r5, r6'], wakes), [
      'notes|e2 in r3, r4',
      'notes|e3 in r5, r6',
    ]);
  });
});
