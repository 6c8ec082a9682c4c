import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CoalescerState, Offer } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import { BATCH_BUDGET_CHARS, CoalescerMachine, initialState, runInputOf, SKIPPED_SIGNAL_EVERY_MS, type NextAction } from '../../workflows/coalescer/machine';
import { SEEN_CAPACITY } from '../../workflows/coalescer/seen';
import { SKIPPED_PAYLOAD_CHARS } from '../../workflows/coalescer/skips';
import { closedCoalescersQuery, runEndedOf, toOfferAgain } from '../../activities/coalescer/recover';
import type { RunResult } from '../../src/core/run-types';
import { runEndOf } from '../../src/core/run-end';
import { jsonBytes } from '../../src/core/bytes';
import { FIRST_ANSWER_BYTES } from '../../src/core/coalesce-carried';

/*
 * The coalescer's decisions without a server: each rule is driven through the machine the workflow
 * shell drives, with the clock in the test's hands. test/coalesce*.test.ts keep the wiring (the gate's
 * offers, child runs, signals and timers on a real server).
 */
const T0 = Date.parse('2026-12-02T10:00:00Z');

function machineOf(over: Partial<CoalescePolicy> = {}, state: CoalescerState = initialState(T0)): CoalescerMachine {
  const policy: CoalescePolicy = {
    debouncePeriodMs: 1000,
    maxWaitMs: 5000,
    whileRunning: 'skip',
    idleCloseMs: 60_000,
    dedupHorizonMs: 5_000,
    maxEventsPerRun: 100,
    ...over,
  };
  return new CoalescerMachine({ agent: 'canary', wakeKey: 'order-7', policy }, state);
}

/** An event offered by one delivery (its offer id). */
function offerOf(name: string, extra: Partial<Offer['event']> = {}, offerId = `offer-${name}`): Offer {
  return {
    event: {
      eventKey: `ev-${name}`,
      source: 'ping',
      type: name,
      entity: 'order-7',
      occurredAt: '2026-12-02T10:00:00Z',
      bucketStart: '2026-12-02T10:00:00Z',
      deliveryIds: [`d-${name}`],
      payload: { name },
      fingerprint: `fp-${name}`,
      ...extra,
    },
    offerId,
  };
}

/** The run key of the `n`th batch (in the test chain, `0`) opened by event `ev-<name>`. */
const runKeyOf = (name: string, n = 1) => `canary#order-7@ev-${name}~0.${n.toString(36)}`;

/** The step the loop would take at `atMs`, asserted to be a `start`: the batch it starts. */
function started(m: CoalescerMachine, atMs: number) {
  const step = m.next(atMs, false);
  assert.equal(step.kind, 'start', JSON.stringify(step));
  return (step as Extract<NextAction, { kind: 'start' }>).batch;
}

/** A machine with a live run that took `name`. */
function withLiveRun(over: Partial<CoalescePolicy>, name = 'a'): CoalescerMachine {
  const m = machineOf(over);
  m.offer(offerOf(name), T0);
  started(m, T0 + 1000);
  assert.equal(m.state.running?.runKey, runKeyOf(name));
  return m;
}

describe('the coalescer machine', () => {
  test('debounce: each event pushes the start back by the period; a quiet period starts one run with every event', () => {
    const m = machineOf({ debouncePeriodMs: 1000, maxWaitMs: 5000 });
    const a = m.offer(offerOf('a'), T0);
    assert.deepEqual(a, { decision: 'started', coalescerId: 'canary#order-7', runKey: runKeyOf('a'), runState: 'pending', startsInMs: 1000 });
    assert.deepEqual(m.next(T0, false), { kind: 'wait', untilMs: T0 + 1000 });
    const b = m.offer(offerOf('b'), T0 + 600);
    assert.equal(b.decision, 'coalesced');
    assert.equal(b.runKey, runKeyOf('a'));
    assert.equal(b.startsInMs, 1000);
    // The first event's due time has passed, but the second pushed the start to 600 + 1000.
    assert.deepEqual(m.next(T0 + 1000, false), { kind: 'wait', untilMs: T0 + 1600 });
    assert.deepEqual(m.next(T0 + 1599, false), { kind: 'wait', untilMs: T0 + 1600 });
    const batch = started(m, T0 + 1600);
    assert.deepEqual(
      batch.events.map((e) => e.eventKey),
      ['ev-a', 'ev-b'],
    );
    assert.equal(m.state.pending, undefined);
    assert.deepEqual(m.state.running, {
      runKey: runKeyOf('a'),
      startedAtMs: T0 + 1600,
      events: batch.events,
      overflow: 0,
      chars: batch.events.reduce((n, e) => n + JSON.stringify(e).length, 0),
    });
    assert.deepEqual(m.state.counts, { offered: 2, started: 1, coalesced: 1, skipped: 0, stale: 0, runs: 1 });
    assert.deepEqual(m.state.runs, [{ runKey: runKeyOf('a'), events: 2, startedAt: '2026-12-02T10:00:01.600Z' }]);
  });

  test('maxWait: events that never go quiet still start the run maxWait after the first', () => {
    const m = machineOf({ debouncePeriodMs: 1000, maxWaitMs: 3000 });
    for (let t = 0; t < 3000; t += 800) {
      m.offer(offerOf(`e${t}`), T0 + t);
      const step = m.next(T0 + t, false);
      assert.equal(step.kind, 'wait');
      assert.equal((step as Extract<NextAction, { kind: 'wait' }>).untilMs, Math.min(T0 + t + 1000, T0 + 3000));
    }
    // The last event came at 2400: the debounce alone would wait until 3400.
    const answer = m.offer(offerOf('late'), T0 + 2900);
    assert.equal(answer.startsInMs, 100, 'bounded by maxWait, not the period');
    const batch = started(m, T0 + 3000);
    assert.equal(batch.events.length, 5);
    assert.equal(batch.openedAtMs, T0);
  });

  test('skip: an event during a live run is recorded on that run in one signal, and runs nothing', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    const b = m.offer(offerOf('b'), T0 + 2000);
    const c = m.offer(offerOf('c'), T0 + 2100);
    assert.deepEqual(b, { decision: 'skipped', coalescerId: 'canary#order-7', runKey: runKeyOf('a'), runState: 'running' });
    assert.equal(c.decision, 'skipped');
    assert.equal(m.state.pending, undefined, 'no follow-up batch');
    const step = m.next(T0 + 2100, false);
    assert.equal(step.kind, 'record-skipped');
    const { runKey, events } = step as Extract<NextAction, { kind: 'record-skipped' }>;
    assert.equal(runKey, runKeyOf('a'));
    assert.deepEqual(
      events.map((e) => e.eventKey),
      ['ev-b', 'ev-c'],
    );
    assert.ok(
      events.every((e) => 'payload' in e && !('fingerprint' in e)),
      'recorded with its payload (a replay of the run runs it too), without fingerprint',
    );
    // Handed out once; with the live run still going, the loop waits with no timer.
    assert.deepEqual(m.next(T0 + 2100, false), { kind: 'wait' });
    assert.equal(m.state.counts.skipped, 2);
  });

  test('a batch holds at most BATCH_BUDGET_CHARS of events in full: the rest are counted from the last back, the newest kept', () => {
    const m = machineOf({ debouncePeriodMs: 1000, maxWaitMs: 60_000 });
    const big = { payload: { blob: 'x'.repeat(Math.floor(BATCH_BUDGET_CHARS * 0.3)) } };
    for (let i = 0; i < 8; i++) m.offer(offerOf(`e${i}`, big), T0 + i);
    const pending = m.state.pending!;
    const chars = pending.events.reduce((n, e) => n + JSON.stringify(e).length, 0);
    assert.ok(chars <= BATCH_BUDGET_CHARS, `${chars} characters held`);
    assert.equal(pending.chars, chars, 'the kept count is the events’ own');
    assert.deepEqual(
      pending.events.map((e) => e.eventKey),
      ['ev-e0', 'ev-e1', 'ev-e7'],
      'the opener, then the newest',
    );
    assert.equal(pending.overflow, 5);
    assert.equal(m.state.counts.coalesced, 7, 'every event answered and counted');
    const { origin } = runInputOf({ agent: 'canary', wakeKey: 'order-7' }, started(m, T0 + 2000));
    assert.equal(origin.kind === 'batch' && origin.absorbedOverflow, 5);
    assert.ok(JSON.stringify(origin).length < 2_000_000 - 100_000, 'the run’s input stays under Temporal’s 2 MB');
  });

  test('steer: an event past the live run’s BATCH_BUDGET_CHARS goes to the follow-up batch', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    const big = { payload: { blob: 'x'.repeat(Math.floor(BATCH_BUDGET_CHARS * 0.4)) } };
    assert.equal(m.offer(offerOf('b', big), T0 + 2000).decision, 'steered');
    assert.equal(m.offer(offerOf('c', big), T0 + 2001).decision, 'steered');
    assert.equal(m.offer(offerOf('d', big), T0 + 2002).decision, 'started', 'over the budget: a follow-up batch');
    assert.ok(m.state.running!.chars! <= BATCH_BUDGET_CHARS);
  });

  test('skip: later skips are signalled at most once a SKIPPED_SIGNAL_EVERY_MS, all at once before a continue-as-new', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    m.offer(offerOf('b'), T0 + 2000);
    assert.equal(m.skips.open('ev-b'), true, 'a skip waits for its record');
    assert.equal(m.next(T0 + 2000, false).kind, 'record-skipped', 'the first skip goes at once');
    assert.equal(m.offer(offerOf('c'), T0 + 2010).decision, 'skipped', 'decided at once');
    assert.deepEqual(m.next(T0 + 2010, false), { kind: 'wait' }, 'one record in flight at a time');
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2020);
    assert.equal(m.skips.open('ev-b'), false, 'delivered: the skip stands');
    m.offer(offerOf('d'), T0 + 2100);
    const due = T0 + 2000 + SKIPPED_SIGNAL_EVERY_MS;
    assert.deepEqual(m.next(T0 + 2100, false), { kind: 'wait', untilMs: due }, 'held until its time, with a timer for it');
    const step = m.next(due, false) as Extract<NextAction, { kind: 'record-skipped' }>;
    assert.equal(step.kind, 'record-skipped');
    assert.deepEqual(
      step.events.map((e) => e.eventKey),
      ['ev-c', 'ev-d'],
      'one signal for both',
    );
    m.skipsRecorded(runKeyOf('a'), true, due + 5);
    m.offer(offerOf('e'), due + 10);
    assert.equal(m.next(due + 10, true).kind, 'record-skipped', 'owed skips go out before a continue-as-new, due or not');
    assert.deepEqual(m.next(due + 10, true), { kind: 'wait' }, 'no continue-as-new while a record is in flight');
    m.skipsRecorded(runKeyOf('a'), true, due + 20);
    assert.deepEqual(m.next(due + 20, true), { kind: 'continue-as-new' });
    assert.equal(m.state.counts.skipped, 4);
  });

  test('skip: a record its run refused (it had closed, its end not yet known) takes the skips back into a batch', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    assert.equal(m.offer(offerOf('b'), T0 + 2000).decision, 'skipped');
    assert.equal(m.next(T0 + 2000, false).kind, 'record-skipped');
    assert.equal(m.offer(offerOf('c'), T0 + 2010).decision, 'skipped');
    m.skipsRecorded(runKeyOf('a'), false, T0 + 2020);
    assert.equal(m.skips.open('ev-b') || m.skips.open('ev-c'), false);
    assert.deepEqual(
      m.state.pending?.events.map((e) => e.eventKey),
      ['ev-b', 'ev-c'],
      'the refused skip and the one owed to the same run, in order',
    );
    const runKey = m.state.pending!.runKey;
    assert.deepEqual(m.offer(offerOf('b'), T0 + 2030), { decision: 'started', coalescerId: 'canary#order-7', runKey, runState: 'pending', startsInMs: 0 });
    assert.equal(m.offer(offerOf('c'), T0 + 2030).decision, 'coalesced', "the waiting offer's answer now");
    assert.equal(m.offer(offerOf('c', {}, 'redelivery'), T0 + 2030).runKey, runKey, 'a redelivery names the batch that took it');
    assert.equal(m.next(T0 + 2030, false).kind, 'wait', 'the batch waits for the dead run’s end');
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'failed' }, T0 + 2040);
    assert.equal(m.next(T0 + 60_000, false).kind, 'start');
    assert.deepEqual(m.state.counts, { offered: 3, started: 2, coalesced: 1, skipped: 0, stale: 0, runs: 2 });
  });

  test('skip: skips owed to a run that has ended meanwhile are still recorded: they stand only if it takes them', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    assert.equal(m.offer(offerOf('b'), T0 + 2000).decision, 'skipped');
    assert.equal(m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 2100), true);
    const step = m.next(T0 + 2100, false);
    assert.deepEqual(step.kind === 'record-skipped' && step.runKey, runKeyOf('a'));
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2110);
    assert.deepEqual(m.next(T0 + 2110, false), { kind: 'wait', untilMs: T0 + 2100 + 60_000 });
    assert.equal(m.state.counts.skipped, 1);
    assert.deepEqual(m.state.runs[0], {
      runKey: runKeyOf('a'),
      events: 1,
      startedAt: '2026-12-02T10:00:01.000Z',
      endedAt: '2026-12-02T10:00:02.100Z',
      terminalReason: 'success',
    });
  });

  test('buffer_one: events during a live run gather in one follow-up batch that starts only when the run ends', () => {
    const m = withLiveRun({ whileRunning: 'buffer_one' });
    const b = m.offer(offerOf('b'), T0 + 2000);
    const c = m.offer(offerOf('c'), T0 + 2100);
    assert.deepEqual(b, { decision: 'started', coalescerId: 'canary#order-7', runKey: runKeyOf('b', 2), runState: 'pending', startsInMs: 0 });
    assert.equal(c.decision, 'coalesced');
    assert.equal(c.runKey, runKeyOf('b', 2));
    // Long past its due time, the follow-up still waits for the live run.
    assert.deepEqual(m.next(T0 + 60_000, false), { kind: 'wait' });
    assert.equal(m.runEnded({ runKey: 'canary#order-7@some-other-run', terminalReason: 'success' }, T0 + 60_000), false, 'another run ending frees nothing');
    assert.equal(m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 60_000), true);
    const batch = started(m, T0 + 60_000);
    assert.deepEqual(
      batch.events.map((e) => e.eventKey),
      ['ev-b', 'ev-c'],
    );
    assert.equal(batch.supersedes, undefined);
    assert.equal(m.state.counts.runs, 2);
  });

  test('cancel: an event during a live run supersedes it; the restart takes both runs’ events', () => {
    const m = withLiveRun({ whileRunning: 'cancel' });
    const b = m.offer(offerOf('b'), T0 + 2000);
    assert.deepEqual(b, { decision: 'started', coalescerId: 'canary#order-7', runKey: runKeyOf('b', 2), runState: 'pending', startsInMs: 0 });
    assert.equal(m.state.running?.cancelRequested, true);
    assert.deepEqual(m.next(T0 + 2000, false), { kind: 'supersede', runKey: runKeyOf('a'), by: runKeyOf('b', 2) });
    // A later event joins the restart; the live run is not superseded twice.
    assert.equal(m.offer(offerOf('c'), T0 + 2100).decision, 'coalesced');
    assert.deepEqual(m.next(T0 + 60_000, false), { kind: 'wait' });
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'cancelled' }, T0 + 2500);
    const batch = started(m, T0 + 60_000);
    assert.deepEqual(
      batch.events.map((e) => e.eventKey),
      ['ev-a', 'ev-b', 'ev-c'],
    );
    assert.equal(batch.supersedes, runKeyOf('a'));
    const input = runInputOf({ agent: 'canary', wakeKey: 'order-7' }, batch);
    assert.equal(input.origin.kind === 'batch' && input.origin.supersedes, runKeyOf('a'));
    assert.equal(input.eventKey, 'ev-b', 'the run is named after, and opened by, the event that restarted it');
  });

  test('stale: a version older than the newest seen from its source is answered stale and runs nothing', () => {
    const m = machineOf();
    assert.equal(m.offer(offerOf('v5', { version: 5 }), T0).decision, 'started');
    const v3 = m.offer(offerOf('v3', { version: 3 }), T0 + 100);
    assert.deepEqual(v3, { decision: 'stale', coalescerId: 'canary#order-7', newestVersion: 5 });
    assert.equal(m.offer(offerOf('v6', { version: 6 }), T0 + 200).decision, 'coalesced');
    // Versions of another source are not comparable: its version 1 is taken.
    assert.equal(m.offer(offerOf('other', { version: 1, source: 'campaigns' }), T0 + 300).decision, 'coalesced');
    assert.deepEqual(
      m.state.pending!.events.map((e) => e.eventKey),
      ['ev-v5', 'ev-v6', 'ev-other'],
    );
    assert.deepEqual(
      m.state.staleEvents.map((e) => [e.eventKey, e.version]),
      [['ev-v3', 3]],
    );
    assert.deepEqual(m.state.newestVersion, { ping: 6, campaigns: 1 });
    assert.equal(m.state.counts.stale, 1);
  });

  test('dedup: a retried offer gets its first answer again, across a continue-as-new, and changes nothing', () => {
    const m = machineOf();
    const first = m.offer(offerOf('a'), T0);
    m.offer(offerOf('b'), T0 + 100);
    const counts = structuredClone(m.state.counts);
    assert.deepEqual(m.offer(offerOf('a'), T0 + 200), first);
    assert.deepEqual(m.state.counts, counts);
    assert.equal(m.state.pending!.events.length, 2);
    // The state crosses continue-as-new as plain JSON: the next run answers the retry the same way.
    const next = machineOf({}, JSON.parse(JSON.stringify(m.state)) as CoalescerState);
    assert.deepEqual(next.offer(offerOf('b'), T0 + 300), { ...first, decision: 'coalesced', startsInMs: 1000 });
    assert.equal(next.state.pending!.events.length, 2);
  });

  test('dedup: an event already held is never taken twice, even offered by another delivery', () => {
    const m = machineOf({ whileRunning: 'buffer_one' });
    m.offer(offerOf('a'), T0);
    m.offer(offerOf('b'), T0 + 100);
    const again = m.offer(offerOf('a', {}, 'another-run'), T0 + 200);
    assert.deepEqual(again, { decision: 'started', duplicate: true, coalescerId: 'canary#order-7', runKey: runKeyOf('a'), runState: 'pending' });
    assert.equal(m.offer(offerOf('b', {}, 'another-run'), T0 + 200).decision, 'coalesced');
    assert.equal(m.state.pending!.events.length, 2);
    started(m, T0 + 1100);
    // Held by the live run now.
    assert.deepEqual(m.offer(offerOf('b', {}, 'a-third-run'), T0 + 1200), {
      decision: 'coalesced',
      duplicate: true,
      coalescerId: 'canary#order-7',
      runKey: runKeyOf('a'),
      runState: 'running',
    });
    assert.equal(m.state.pending, undefined, 'no follow-up batch for a held event');
    assert.equal(m.state.counts.offered, 2);
  });

  test('mismatch: an event key already held, offered with other inputs, is refused and the held event kept', () => {
    const m = machineOf({ whileRunning: 'buffer_one' });
    m.offer(offerOf('a'), T0);
    const other = m.offer(offerOf('a', { fingerprint: 'fp-other', payload: { name: 'other' } }, 'rearmed-run'), T0 + 100);
    assert.deepEqual(other, { decision: 'mismatch', coalescerId: 'canary#order-7', runKey: runKeyOf('a'), runState: 'pending' });
    assert.deepEqual(m.offer(offerOf('a', { fingerprint: 'fp-other' }, 'rearmed-run'), T0 + 200), other, 'its retry gets the same answer');
    assert.deepEqual(
      m.state.pending!.events.map((e) => e.fingerprint),
      ['fp-a'],
    );
    assert.equal(m.state.pending!.lastAtMs, T0, 'the debounce is not pushed back');
    started(m, T0 + 1000);
    assert.equal(m.offer(offerOf('a', { fingerprint: 'fp-other' }, 'a-third-run'), T0 + 1100).runState, 'running');
    assert.equal(m.offer(offerOf('a', { fingerprint: 'fp-other' }, 'a-third-run'), T0 + 1100).decision, 'mismatch');
    assert.equal(m.state.pending, undefined);
    assert.equal(m.state.counts.offered, 1);
  });

  test('a redelivery of a pending event keeps its delivery id once, and the run names the opener’s first delivery', () => {
    const m = machineOf();
    m.offer(offerOf('a'), T0);
    m.redelivered('ev-a', ['d-a', 'd-a2']);
    m.redelivered('ev-unknown', ['d-x']);
    const batch = started(m, T0 + 1000);
    assert.deepEqual(batch.events[0]!.deliveryIds, ['d-a', 'd-a2']);
    const input = runInputOf({ agent: 'canary', wakeKey: 'order-7' }, batch);
    assert.equal(input.runKey, runKeyOf('a'));
    assert.equal(input.deliveryId, 'd-a');
    assert.equal(input.origin.kind === 'batch' && input.origin.coalescerId, 'canary#order-7');
    assert.deepEqual(input.payload, { name: 'a' });
  });

  test('a full batch counts the overflow and keeps the newest event in its last slot', () => {
    const m = machineOf({ maxEventsPerRun: 2 });
    for (const name of ['a', 'b', 'c', 'd']) m.offer(offerOf(name), T0);
    const batch = started(m, T0 + 1000);
    assert.deepEqual(
      batch.events.map((e) => e.eventKey),
      ['ev-a', 'ev-d'],
    );
    assert.equal(batch.overflow, 2);
    const { origin } = runInputOf({ agent: 'canary', wakeKey: 'order-7' }, batch);
    assert.equal(origin.kind === 'batch' && origin.absorbedOverflow, 2);
    assert.equal(m.state.runs[0]!.events, 4);
  });

  test('owed signals go out before a continue-as-new; idle for idleCloseMs, the coalescer closes', () => {
    const m = withLiveRun({ whileRunning: 'skip', idleCloseMs: 10_000 });
    m.offer(offerOf('b'), T0 + 2000);
    assert.equal(m.next(T0 + 2000, true).kind, 'record-skipped');
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2000);
    assert.deepEqual(m.next(T0 + 2000, true), { kind: 'continue-as-new' });
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 3000);
    assert.equal(m.idle, true);
    assert.deepEqual(m.next(T0 + 12_999, false), { kind: 'wait', untilMs: T0 + 13_000 });
    assert.deepEqual(m.next(T0 + 13_000, false), { kind: 'close' });
  });

  test('dedup by key after the run ended: the first decision and run again, mismatch on other inputs, across continue-as-new', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    m.offer(offerOf('b'), T0 + 1500); // skipped on the live run
    m.offer(offerOf('old', { version: 1 }), T0 + 1600);
    m.offer(offerOf('new', { version: 2 }), T0 + 1700);
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 2000);
    const next = machineOf({}, JSON.parse(JSON.stringify(m.state)) as CoalescerState);
    const offered = next.state.counts.offered;
    assert.deepEqual(next.offer(offerOf('a', {}, 'redelivery'), T0 + 2500), {
      decision: 'started',
      duplicate: true,
      coalescerId: 'canary#order-7',
      runKey: runKeyOf('a'),
    });
    assert.deepEqual(next.offer(offerOf('b', {}, 'redelivery'), T0 + 2500), {
      decision: 'skipped',
      duplicate: true,
      coalescerId: 'canary#order-7',
      runKey: runKeyOf('a'),
    });
    assert.equal(next.offer(offerOf('a', { fingerprint: 'fp-other' }, 'other-inputs'), T0 + 2600).decision, 'mismatch');
    assert.equal(next.offer(offerOf('new', { version: 0 }, 'redelivery'), T0 + 2600).decision, 'skipped', 'its first decision, not stale');
    assert.equal(next.state.counts.offered, offered, 'a redelivery is not a new offer');
    assert.equal(next.state.pending, undefined, 'no run for a redelivery');
  });

  test('the dedup horizon: an event past it is decided afresh; the coalescer stays open until its newest has passed', () => {
    const m = machineOf({ dedupHorizonMs: 5_000, idleCloseMs: 1_000 });
    m.offer(offerOf('a'), T0);
    started(m, T0 + 1000);
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 2000);
    assert.deepEqual(m.next(T0 + 3000, false), { kind: 'wait', untilMs: T0 + 5000 }, 'idle, but the event is inside the horizon');
    assert.equal(m.offer(offerOf('a', {}, 'late'), T0 + 4000).duplicate, true);
    assert.deepEqual(m.next(T0 + 5000, false), { kind: 'close' });
    assert.equal(m.seen.size, 0);
    assert.equal(m.offer(offerOf('a', {}, 'later'), T0 + 5001).decision, 'started', 'past the horizon: a new event');
  });

  test('forgetRun (a person re-armed a closed run): its events are decided afresh, a live run’s never', () => {
    const m = withLiveRun({ whileRunning: 'buffer_one' });
    m.offer(offerOf('b'), T0 + 1500);
    assert.deepEqual(m.forgetRun(runKeyOf('a')), [], 'the live run keeps its events');
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'failed' }, T0 + 2000);
    assert.deepEqual(m.forgetRun(runKeyOf('a')), ['ev-a']);
    assert.equal(m.offer(offerOf('a', {}, 'again'), T0 + 2100).decision, 'coalesced', 'taken again, into the pending follow-up');
    assert.equal(m.offer(offerOf('b', {}, 'again'), T0 + 2100).duplicate, true, 'the follow-up’s own event is still remembered');
  });
});

describe('the coalescer machine: overlap steer', () => {
  const steerStep = (m: CoalescerMachine, atMs: number) => {
    const step = m.next(atMs, true); // owed steers go out even before a suggested continue-as-new
    assert.equal(step.kind, 'steer', JSON.stringify(step));
    return step as Extract<NextAction, { kind: 'steer' }>;
  };

  test('steer: events during a live run are answered steered, held on that run, and sent to it in one update', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    const b = m.offer(offerOf('b'), T0 + 2000);
    const c = m.offer(offerOf('c'), T0 + 2100);
    assert.deepEqual(b, { decision: 'steered', coalescerId: 'canary#order-7', runKey: runKeyOf('a'), runState: 'running' });
    assert.equal(c.decision, 'steered');
    assert.equal(m.state.pending, undefined, 'no follow-up batch');
    assert.deepEqual(
      m.state.running!.events.map((e) => e.eventKey),
      ['ev-a', 'ev-b', 'ev-c'],
    );
    assert.deepEqual(m.state.running!.steered, ['ev-b', 'ev-c']);
    const step = steerStep(m, T0 + 2200);
    assert.deepEqual([step.runKey, step.id, step.events.map((e) => e.eventKey)], [runKeyOf('a'), 'steer:ev-b', ['ev-b', 'ev-c']]);
    assert.deepEqual(step.events[0]!.payload, { name: 'b' }, 'the run gets the payloads');
    assert.equal(m.next(T0 + 2200, false).kind, 'wait', 'handed out once');
    m.steerAnswered(runKeyOf('a'), { accepted: ['ev-b', 'ev-c'], refused: [] }, step.events, T0 + 2300);
    assert.equal(m.state.pending, undefined);
    assert.equal(m.state.counts.steered, 2);
    assert.equal(m.state.runs.at(-1)!.events, 3);
    // Held on the live run: offered again (another admission run), it is answered steered and not taken twice.
    assert.equal(m.offer(offerOf('b', {}, 'another-run'), T0 + 2400).decision, 'steered');
    assert.equal(m.state.running!.events.length, 3);
    // The next steer carries only what arrived since.
    m.offer(offerOf('d'), T0 + 2500);
    assert.deepEqual(
      steerStep(m, T0 + 2600).events.map((e) => e.eventKey),
      ['ev-d'],
    );
  });

  test('steer: events the run refuses (it began committing) wait in one follow-up batch, with every later event', () => {
    const m = withLiveRun({ whileRunning: 'steer', debouncePeriodMs: 1000 });
    m.offer(offerOf('b'), T0 + 2000);
    const step = steerStep(m, T0 + 2000);
    // Offered while the steer was in flight: steered too, owed to the run.
    assert.equal(m.offer(offerOf('c'), T0 + 2100).decision, 'steered');
    m.steerAnswered(runKeyOf('a'), { accepted: [], refused: ['ev-b'] }, step.events, T0 + 2200);
    // The owed one is not sent to a run that refused: it follows the refused one into the batch.
    assert.equal(m.next(T0 + 2200, false).kind, 'wait');
    assert.deepEqual(
      m.state.pending!.events.map((e) => e.eventKey),
      ['ev-b', 'ev-c'],
    );
    assert.deepEqual(
      m.state.running!.events.map((e) => e.eventKey),
      ['ev-a'],
    );
    assert.equal(m.state.running!.steerClosed, true);
    assert.equal(m.state.counts.steerRefused, 1);
    // Later events join the follow-up batch (buffer_one), and a redelivery of a refused one names it.
    const d = m.offer(offerOf('d'), T0 + 2300);
    assert.deepEqual([d.decision, d.runKey, d.runState], ['coalesced', runKeyOf('b', 2), 'pending']);
    // A redelivery gets its first decision, with the run that holds it now.
    const again = m.offer(offerOf('b', {}, 'again'), T0 + 2400);
    assert.deepEqual([again.decision, again.runKey, again.duplicate], ['steered', runKeyOf('b', 2), true]);
    // The follow-up starts only once the live run ends.
    assert.equal(m.next(T0 + 10_000, false).kind, 'wait');
    assert.equal(m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 10_000), true);
    assert.deepEqual(
      started(m, T0 + 10_000).events.map((e) => e.eventKey),
      ['ev-b', 'ev-c', 'ev-d'],
    );
  });

  test('steer: a retry of a steered offer the run refused says the follow-up batch holds it, pending', () => {
    const m = withLiveRun({ whileRunning: 'steer', debouncePeriodMs: 1000 });
    const first = m.offer(offerOf('b'), T0 + 2000);
    assert.deepEqual([first.decision, first.runKey, first.runState], ['steered', runKeyOf('a'), 'running']);
    const step = steerStep(m, T0 + 2000);
    m.steerAnswered(runKeyOf('a'), { accepted: [], refused: ['ev-b'] }, step.events, T0 + 2100);
    assert.equal(m.state.pending?.runKey, runKeyOf('b', 2));
    // The same offer again (the gate's fallback signal): its decision, and where the event waits now.
    const retried = m.offer(offerOf('b'), T0 + 2200);
    assert.deepEqual(retried, { decision: 'steered', coalescerId: 'canary#order-7', runKey: runKeyOf('b', 2), runState: 'pending', startsInMs: 0 });
    assert.deepEqual(m.lookup('ev-b') && [m.lookup('ev-b')!.runKey, m.lookup('ev-b')!.runState], [runKeyOf('b', 2), 'pending']);
    // Once the follow-up runs, the retry names it running.
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success', seen: [] }, T0 + 3000);
    started(m, T0 + 4000);
    const later = m.offer(offerOf('b'), T0 + 4100);
    assert.deepEqual([later.decision, later.runKey, later.runState], ['steered', runKeyOf('b', 2), 'running']);
  });

  test('steer: an event the run neither took nor refused, or owed to a run that ended, goes to the follow-up batch', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    m.offer(offerOf('b'), T0 + 2000);
    m.offer(offerOf('c'), T0 + 2000);
    const step = steerStep(m, T0 + 2000);
    m.steerAnswered(runKeyOf('a'), { accepted: ['ev-b'], refused: [] }, step.events, T0 + 2100);
    assert.deepEqual(
      m.state.pending!.events.map((e) => e.eventKey),
      ['ev-c'],
    );
    const n = withLiveRun({ whileRunning: 'steer' });
    n.offer(offerOf('b'), T0 + 2000);
    n.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 2050);
    assert.equal(n.next(T0 + 2100, false).kind, 'wait', 'nothing is sent to a run that has ended');
    assert.deepEqual(
      n.state.pending!.events.map((e) => e.eventKey),
      ['ev-b'],
    );
  });

  test('steer: with no live run an event opens or joins a batch; a full live run takes no more steers', () => {
    const m = machineOf({ whileRunning: 'steer' });
    assert.equal(m.offer(offerOf('a'), T0).decision, 'started');
    assert.equal(m.offer(offerOf('b'), T0 + 100).decision, 'coalesced');
    assert.equal(m.next(T0 + 200, true).kind, 'continue-as-new', 'nothing owed');
    const full = withLiveRun({ whileRunning: 'steer', maxEventsPerRun: 2 });
    assert.equal(full.offer(offerOf('b'), T0 + 2000).decision, 'steered');
    const c = full.offer(offerOf('c'), T0 + 2000);
    assert.deepEqual([c.decision, c.runKey], ['started', runKeyOf('c', 2)]);
  });

  test('steer: what is held on the live run crosses a continue-as-new; each update ID is new', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    m.offer(offerOf('b'), T0 + 2000);
    const step = steerStep(m, T0 + 2000);
    m.steerAnswered(runKeyOf('a'), { accepted: ['ev-b'], refused: [] }, step.events, T0 + 2100);
    assert.equal(m.next(T0 + 2100, true).kind, 'continue-as-new');
    const next = machineOf({ whileRunning: 'steer' }, structuredClone(m.state));
    assert.equal(next.offer(offerOf('b', {}, 'retry-elsewhere'), T0 + 2200).decision, 'steered');
    next.offer(offerOf('c'), T0 + 2300);
    const later = steerStep(next, T0 + 2300);
    assert.equal(later.id, 'steer:ev-c', 'a fresh update ID: never one the run has answered');
  });
});

describe('the coalescer machine: no wake left behind', () => {
  test('a redelivery after the coalescer closed opens a batch under a run key no earlier run had', () => {
    // The first chain: ev-a opens a batch, its run succeeds, the coalescer closes past its horizon.
    const first = machineOf({}, initialState(T0, 'chain-1'));
    assert.equal(first.offer(offerOf('a'), T0).decision, 'started');
    const old = started(first, T0 + 1000);
    first.runEnded({ runKey: old.runKey, terminalReason: 'success' }, T0 + 2000);
    assert.equal(first.next(T0 + 120_000, false).kind, 'close');
    // A new chain after the close: the same event delivered again a day later, then a new one.
    const fresh = machineOf({}, initialState(T0 + 86_400_000, 'chain-2'));
    const again = fresh.offer(offerOf('a', {}, 'a-day-later'), T0 + 86_400_000);
    assert.equal(again.decision, 'started');
    assert.notEqual(again.runKey, old.runKey, 'never the old run’s ID: a start under it would be refused and waited for forever');
    const b = fresh.offer(offerOf('b'), T0 + 86_400_100);
    assert.deepEqual([b.decision, b.runKey], ['coalesced', again.runKey]);
    assert.equal(started(fresh, T0 + 86_402_000).runKey, again.runKey);
  });

  test('within one chain every batch has its own run key, even for an event decided again past the dedup table', () => {
    const m = machineOf({ dedupHorizonMs: 1000 });
    const a = m.offer(offerOf('a'), T0);
    started(m, T0 + 1000);
    m.runEnded({ runKey: a.runKey!, terminalReason: 'success' }, T0 + 1500);
    m.next(T0 + 10_000, false); // prunes ev-a: past the horizon
    const again = m.offer(offerOf('a', {}, 'much-later'), T0 + 10_000);
    assert.equal(again.decision, 'started');
    assert.notEqual(again.runKey, a.runKey);
  });

  test('a retried first offer gets its first decision, not a redelivery’s, even past the recent answers', () => {
    const m = machineOf({ maxEventsPerRun: 10_000 });
    const first = m.offer(offerOf('a'), T0);
    for (let i = 0; i < 700; i++) m.offer(offerOf(`x${i}`), T0 + 1);
    const retried = m.offer(offerOf('a'), T0 + 2);
    assert.equal(retried.duplicate, undefined, 'answered as the first offer was');
    assert.deepEqual([retried.decision, retried.runKey, retried.runState], [first.decision, first.runKey, 'pending']);
    const other = m.offer(offerOf('a', {}, 'another-delivery'), T0 + 3);
    assert.equal(other.duplicate, true, 'another delivery is a redelivery');
  });

  test('steer: a run that ends before its model was given a steered event hands it to the follow-up run', () => {
    for (const terminalReason of ['budget_exhausted', 'escalated', 'failed', 'success'] as const) {
      const m = withLiveRun({ whileRunning: 'steer' });
      const b = m.offer(offerOf('b'), T0 + 2000);
      const c = m.offer(offerOf('c'), T0 + 2100);
      assert.deepEqual([b.decision, c.decision], ['steered', 'steered']);
      const step = m.next(T0 + 2200, false) as Extract<NextAction, { kind: 'steer' }>;
      m.steerAnswered(runKeyOf('a'), { accepted: ['ev-b', 'ev-c'], refused: [] }, step.events, T0 + 2300);
      // Its model saw ev-b in a later turn; ev-c came after its last one.
      assert.equal(m.runEnded({ runKey: runKeyOf('a'), terminalReason, seen: ['ev-b'] }, T0 + 3000), true);
      const next = started(m, T0 + 5000);
      assert.deepEqual(
        next.events.map((e) => e.eventKey),
        ['ev-c'],
        terminalReason,
      );
      // A redelivery of ev-c is answered from the run that took it.
      const again = m.offer(offerOf('c', {}, 'resent'), T0 + 5100);
      assert.deepEqual([again.decision, again.runKey, again.duplicate], ['steered', next.runKey, true]);
    }
  });

  test('steer: a run that ended with no word of what its model saw (terminated by hand) hands every steered event on', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    m.offer(offerOf('b'), T0 + 2000);
    m.next(T0 + 2100, false); // the steer step, its answer never comes
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'failed' }, T0 + 3000);
    assert.deepEqual(
      started(m, T0 + 5000).events.map((e) => e.eventKey),
      ['ev-b'],
    );
  });

  test('steer: a steer that cannot be delivered closes the run to steers without holding the coalescer', () => {
    const m = withLiveRun({ whileRunning: 'steer' });
    m.offer(offerOf('b'), T0 + 2000);
    assert.equal(m.next(T0 + 2000, false).kind, 'steer');
    m.steerFailed(runKeyOf('a'));
    const c = m.offer(offerOf('c'), T0 + 2100);
    assert.deepEqual([c.decision, c.runState], ['started', 'pending'], 'the next event waits for the follow-up run');
    assert.equal(m.next(T0 + 2100, true).kind, 'continue-as-new', 'nothing holds a continue-as-new');
  });

  test('a run’s end from its result (child.result(), the watch) and from its signal (asked before a continue-as-new) are one end', () => {
    for (const asked of [false, true]) {
      const m = withLiveRun({ whileRunning: 'steer' });
      m.offer(offerOf('b'), T0 + 2000);
      m.offer(offerOf('c'), T0 + 2050);
      const step = m.next(T0 + 2100, false) as Extract<NextAction, { kind: 'steer' }>;
      m.steerAnswered(runKeyOf('a'), { accepted: ['ev-b', 'ev-c'], refused: [] }, step.events, T0 + 2200);
      // The run's result: its model was given ev-b; ev-c, taken and never given, in full.
      const [b, c] = step.events;
      const result = { terminalReason: 'success', steered: ['ev-b'], unseenEvents: [c], commitBegan: true } as unknown as RunResult;
      const fromResult = runEndOf(runKeyOf('a'), result);
      // What the run's signal carries (workflows/run/record.ts `ended`), sent only when asked.
      const signalled = { runKey: runKeyOf('a'), terminalReason: 'success' as const, seen: ['ev-b'], unseenEvents: [c!], commitBegan: true };
      assert.deepEqual(fromResult, signalled, 'the result tells all the signal does');
      assert.equal(b!.eventKey, 'ev-b');
      // The execution that started it takes it from the child's result; asked (a continue-as-new
      // between), the signal may come too, before or after: the second changes nothing.
      const [first, second] = asked ? [signalled, fromResult] : [fromResult, signalled];
      assert.equal(m.runEnded(first, T0 + 3000), true);
      assert.equal(m.runEnded(second, T0 + 3001), false, 'its second end takes nothing twice');
      const next = started(m, T0 + 5000);
      assert.deepEqual(
        next.events.map((e) => e.eventKey),
        ['ev-c'],
        'only the event its model never saw goes to the follow-up run',
      );
    }
  });

  test('a continue-as-new while the run is live holds nothing; the next execution takes its end by signal', () => {
    const m = withLiveRun({ whileRunning: 'buffer_one' });
    m.offer(offerOf('b'), T0 + 2000);
    assert.equal(m.next(T0 + 2100, true).kind, 'continue-as-new', 'a live run does not hold a continue-as-new');
    const next = machineOf({ whileRunning: 'buffer_one' }, structuredClone(m.state));
    assert.equal(next.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success', seen: [] }, T0 + 3000), true);
    assert.deepEqual(
      started(next, T0 + 5000).events.map((e) => e.eventKey),
      ['ev-b'],
    );
  });

  test('cancel: a run that had begun committing is not redone; the restart keeps only the newer events', () => {
    const m = withLiveRun({ whileRunning: 'cancel' });
    const b = m.offer(offerOf('b'), T0 + 2000);
    assert.equal(b.decision, 'started');
    assert.equal(m.next(T0 + 2000, false).kind, 'supersede');
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success', seen: [], commitBegan: true }, T0 + 2500);
    const restart = started(m, T0 + 4000);
    assert.deepEqual(
      restart.events.map((e) => e.eventKey),
      ['ev-b'],
    );
    assert.equal(restart.supersedes, undefined, 'it restarts nothing: the run finished its commit');
  });

  test('a run whose ID was taken (a coalescer reset by hand) starts under a new key, and its events name it', () => {
    const m = machineOf();
    m.offer(offerOf('a'), T0);
    const b = started(m, T0 + 1000);
    const again = m.rekey(b)!;
    assert.notEqual(again.runKey, b.runKey);
    assert.equal(m.state.running!.runKey, again.runKey);
    assert.equal(m.offer(offerOf('a', {}, 'resent'), T0 + 1100).runKey, again.runKey);
  });

  test('a run whose ID was taken holds as steered the events steered into it: its end sends those its model never saw to a follow-up run', () => {
    for (const saw of [false, true]) {
      const m = machineOf();
      m.offer(offerOf('a'), T0);
      m.offer(offerOf('c'), T0 + 10);
      const b = started(m, T0 + 1010);
      assert.equal(m.metTaken(b, { took: ['ev-a', 'ev-c'], steered: ['ev-c'] }, T0 + 1010), undefined, 'it took both: nothing to start');
      assert.deepEqual(m.state.running!.steered, ['ev-c']);
      m.runEnded({ runKey: b.runKey, terminalReason: 'success', seen: saw ? ['ev-c'] : [] }, T0 + 1500);
      if (saw) assert.equal(m.state.pending, undefined, 'its model saw c: nothing runs again');
      else
        assert.deepEqual(
          started(m, T0 + 4000).events.map((e) => e.eventKey),
          ['ev-c'],
          'c, which its model never saw, runs in a follow-up run',
        );
    }
  });

  test('a run whose ID was taken by the run a discarded branch started: its events stay that run’s, the others wait for a new run', () => {
    const m = machineOf();
    m.offer(offerOf('a'), T0);
    m.offer(offerOf('b'), T0 + 10);
    const b = started(m, T0 + 1010);
    assert.equal(m.metTaken(b, { took: ['ev-a'], steered: [] }, T0 + 1010), undefined, 'nothing to start while the run that took a is live');
    assert.equal(m.state.running!.runKey, b.runKey, 'the run under the taken ID is the live run');
    assert.deepEqual(
      m.state.running!.events.map((e) => e.eventKey),
      ['ev-a'],
    );
    assert.deepEqual(
      m.state.pending!.events.map((e) => e.eventKey),
      ['ev-b'],
    );
    assert.equal(m.offer(offerOf('a', {}, 'resent'), T0 + 1100).runKey, b.runKey, 'a redelivery of a names that run');
    assert.equal(m.offer(offerOf('b', {}, 'resent'), T0 + 1100).runKey, m.state.pending!.runKey);
    assert.equal(m.next(T0 + 3000, false).kind, 'wait', 'the next batch waits for that run');
    m.runEnded({ runKey: b.runKey, terminalReason: 'success', seen: [] }, T0 + 3500);
    const next = started(m, T0 + 4000);
    assert.deepEqual(
      next.events.map((e) => e.eventKey),
      ['ev-b'],
    );
    // A run that took none of the batch's events is passed over, as before; one that took all of them is the batch's run.
    const all = machineOf();
    all.offer(offerOf('c'), T0);
    const c = started(all, T0 + 1000);
    assert.equal(all.metTaken(c, { took: ['ev-c'], steered: [] }, T0 + 1000), undefined);
    assert.equal(all.state.pending, undefined);
    const none = machineOf();
    none.offer(offerOf('d'), T0);
    const d = started(none, T0 + 1000);
    assert.notEqual(none.metTaken(d, { took: ['ev-x'], steered: [] }, T0 + 1000)?.runKey, d.runKey);
  });

  for (const whileRunning of ['buffer_one', 'cancel', 'steer'] as const)
    test(`${whileRunning}: an event offered while the start met the taken ID is neither lost nor run beside that run`, () => {
      // The offer comes while the start (and then the read of what the run took) is awaited: it is
      // decided against the batch as the live run, and opens a batch (buffer_one), a restart (cancel)
      // or is steered into it (steer).
      const m = machineOf({ whileRunning });
      m.offer(offerOf('a'), T0);
      m.offer(offerOf('b'), T0 + 10);
      const b = started(m, T0 + 1010);
      const c = m.offer(offerOf('c'), T0 + 1020);
      assert.equal(m.metTaken(b, { took: ['ev-a'], steered: [] }, T0 + 1030), undefined);
      const holders = (key: string) => [m.state.pending, m.state.running].filter((x) => x?.events.some((e) => e.eventKey === key)).map((x) => x!.runKey);
      assert.deepEqual(holders('ev-a'), whileRunning === 'cancel' ? [m.state.pending!.runKey, b.runKey] : [b.runKey]);
      if (whileRunning === 'steer') {
        // Steered into that run, and owed to it: held there alone, so a run that takes it does not see it run again.
        assert.deepEqual(holders('ev-c'), [b.runKey]);
        assert.deepEqual(holders('ev-b'), [m.state.pending!.runKey]);
        assert.equal(m.lookup('ev-c')?.runKey, b.runKey);
      } else {
        // The batch its offer was answered with still holds it, with the events the taken run did not take.
        assert.equal(m.state.pending?.runKey, c.runKey, 'the batch c was answered with is the pending one');
        assert.deepEqual(holders('ev-c'), [c.runKey]);
        assert.deepEqual(holders('ev-b'), [c.runKey]);
        assert.equal(m.lookup('ev-b')?.runKey, c.runKey);
        assert.equal(m.offer(offerOf('b', {}, 'resent'), T0 + 1100).runKey, c.runKey, 'a redelivery of b names the batch that holds it');
      }
      // The steer goes to the taken run, a restart supersedes it; its end (it ran a, and c if steered) leaves the rest to the next run.
      const step = m.next(T0 + 1100, false);
      if (whileRunning !== 'buffer_one') assert.equal((step as { runKey?: string }).runKey, b.runKey, JSON.stringify(step));
      if (step.kind === 'steer') m.steerAnswered(b.runKey, { accepted: ['ev-c'], refused: [] }, step.events, T0 + 1200);
      const seen = whileRunning === 'steer' ? ['ev-a', 'ev-c'] : ['ev-a'];
      m.runEnded({ runKey: b.runKey, terminalReason: 'success', seen, commitBegan: true }, T0 + 1500);
      assert.deepEqual(
        started(m, T0 + 9000)
          .events.map((e) => e.eventKey)
          .sort(),
        whileRunning === 'steer' ? ['ev-b'] : ['ev-b', 'ev-c'],
      );
    });
});

describe('the coalescer machine: dedup capacity', () => {
  test(`holds ${SEEN_CAPACITY} events within its horizon; past that it counts what it lets go early, and a redelivery of one runs under a new ID`, () => {
    const m = machineOf({ dedupHorizonMs: 86_400_000, maxEventsPerRun: 10 });
    const name = (i: number) => `stream-${i}-${'x'.repeat(40)}`;
    const first = m.offer(offerOf(name(0)), T0);
    for (let i = 1; i < SEEN_CAPACITY; i++) m.offer(offerOf(name(i)), T0 + i);
    assert.equal(m.state.counts.forgottenEarly, undefined, 'nothing let go within the capacity');
    // ev-1 left the pending batch's list long ago (past maxEventsPerRun): only the dedup table knows it.
    const again = m.offer(offerOf(name(1), {}, 'resent'), T0 + SEEN_CAPACITY);
    assert.deepEqual([again.decision, again.duplicate, again.runKey], ['coalesced', true, first.runKey], 'still deduplicated');
    let i = SEEN_CAPACITY;
    while (m.lookup(`ev-${name(1)}`) && i < 4 * SEEN_CAPACITY) m.offer(offerOf(name(i)), T0 + i++);
    assert.ok((m.state.counts.forgottenEarly ?? 0) > 0, `counted after ${i} events`);
    assert.ok(m.state.seenFloorMs! >= T0);
    // The batch runs and ends; then a redelivery of ev-1, forgotten, is a new event: a new run.
    const ran = started(m, T0 + i + 10_000);
    m.runEnded({ runKey: ran.runKey, terminalReason: 'success', seen: [] }, T0 + i + 20_000);
    const late = m.offer(offerOf(name(1), {}, 'past-capacity'), T0 + i + 30_000);
    assert.deepEqual([late.decision, late.duplicate], ['started', undefined], 'decided afresh');
    assert.notEqual(late.runKey, first.runKey, 'under a new run ID, never the first run’s');
    assert.ok(JSON.stringify(m.state).length < 1_500_000, `${JSON.stringify(m.state).length} chars carried across continue-as-new`);
  });
});

describe('the coalescer machine: after a coalescer terminated by hand', () => {
  test('a run of the terminated chain hands back the steered events its model never saw; the new chain runs them once', () => {
    const m = machineOf({ whileRunning: 'steer' }, initialState(T0, 'chain-2'));
    const orphan = offerOf('b').event;
    const end = { runKey: 'canary#order-7@ev-a~chain-1.1', terminalReason: 'success' as const, seen: [], unseenEvents: [orphan] };
    assert.equal(m.runEnded(end, T0), true, 'something to start');
    const batch = started(m, T0 + 2000);
    assert.deepEqual(
      batch.events.map((e) => e.eventKey),
      ['ev-b'],
    );
    assert.equal(batch.events[0]!.steeredFrom, end.runKey);
    assert.equal(m.runEnded(end, T0 + 2100), false, 'the same end again takes nothing twice');
    const again = m.offer(offerOf('b', {}, 'resent'), T0 + 2200);
    assert.deepEqual([again.decision, again.runKey, again.duplicate], ['steered', batch.runKey, true]);
  });
});

test('the coalescer machine: a new chain adopts the dedup table a chain terminated by hand left, before its own', () => {
  const old = machineOf({ maxEventsPerRun: 10_000 }, initialState(T0, 'chain-1'));
  const a = old.offer(offerOf('a'), T0);
  for (let i = 0; i < 600; i++) old.offer(offerOf(`x${i}`), T0 + i); // past the entries kept in full
  const ran = started(old, T0 + 5000);
  old.runEnded({ runKey: ran.runKey, terminalReason: 'success', seen: [] }, T0 + 6000);
  const b = old.offer(offerOf('b', { version: 7 }), T0 + 7000); // waiting in its batch when it is terminated
  const fresh = machineOf({}, initialState(T0 + 10_000, 'chain-2'));
  const mine = fresh.offer(offerOf('c'), T0 + 10_000); // decided before the recovery came
  const left = structuredClone(old.state);
  // As the recovery sends it: the terminated chain's pending events are left out, to be offered again.
  assert.deepEqual(
    left.pending!.events.map((e) => e.eventKey),
    ['ev-b'],
  );
  assert.equal(fresh.adopt({ ...left, except: ['ev-b'] }), 601);
  for (const [name, first] of [
    ['a', a],
    ['x3', a],
  ] as const) {
    const again = fresh.offer(offerOf(name, {}, `resent-${name}`), T0 + 11_000);
    assert.equal(again.duplicate, true, `${name} is a redelivery`);
    assert.equal(again.runKey, first.runKey, `${name} is answered from the terminated chain’s run`);
  }
  // b waited in the terminated chain's batch: offered again, it is decided (and runs) here.
  const recovered = fresh.offer(offerOf('b', { version: 7 }, 'recovered'), T0 + 11_000);
  assert.deepEqual([recovered.decision, recovered.duplicate], ['coalesced', undefined]);
  assert.notEqual(recovered.runKey, b.runKey);
  assert.equal(fresh.offer(offerOf('c', {}, 'resent-c'), T0 + 11_000).runKey, mine.runKey, 'its own stay its own');
  assert.equal(fresh.offer(offerOf('old', { version: 6 }), T0 + 11_000).decision, 'stale', 'versions carry over');
  assert.equal(fresh.adopt(left), 0, 'adopted once (b is decided here now)');
});

test('the coalescer machine: each offer the recovery makes again keeps its own first answer for its retry', () => {
  const old = machineOf({ debouncePeriodMs: 1000, maxWaitMs: 5000 }, initialState(T0, 'chain-1'));
  for (const name of ['x', 'y']) old.offer(offerOf(name), T0);
  const fresh = machineOf({ debouncePeriodMs: 1000, maxWaitMs: 5000 }, initialState(T0, 'chain-2'));
  fresh.offer(offerOf('a'), T0);
  // As the recovery sends them: each under an offer id of its own, at different times into one batch.
  const [x, y] = toOfferAgain({ state: structuredClone(old.state), openSkips: [] }, false, 'run-1');
  assert.notEqual(x!.offerId, y!.offerId);
  const firstX = fresh.offer(x!, T0 + 100);
  const firstY = fresh.offer(y!, T0 + 4500);
  assert.deepEqual([firstX.decision, firstX.startsInMs, firstY.decision, firstY.startsInMs], ['coalesced', 1000, 'coalesced', 500]);
  // The recovery made again (another worker process): each offer is answered as itself.
  assert.deepEqual(fresh.offer(structuredClone(x!), T0 + 4600), firstX);
  assert.deepEqual(fresh.offer(structuredClone(y!), T0 + 4600), firstY);
  assert.equal(fresh.state.firstAnswers?.length, 3);
  assert.ok(jsonBytes(fresh.state.firstAnswers) <= 3 * FIRST_ANSWER_BYTES, `${jsonBytes(fresh.state.firstAnswers)} bytes`);
});

test('a run re-armed in a new chain before the recovery brings the terminated chain’s table: its events are not adopted back', () => {
  // Chain 1 ran a and b (one run), then was terminated by hand; a new event started chain 2 before
  // the supervisor's recovery. A person re-arms the closed run: the forget reaches chain 2, which
  // holds none of its rows yet, and the run is deleted. The recovery then sends chain 1's table.
  const old = machineOf({}, initialState(T0, 'chain-1'));
  for (let i = 0; i < 600; i++) old.offer(offerOf(`x${i}`), T0 + i); // rows compact as well as full
  old.offer(offerOf('a'), T0 + 1000);
  const ran = started(old, T0 + 5000);
  old.runEnded({ runKey: ran.runKey, terminalReason: 'success', seen: [] }, T0 + 6000);
  const fresh = machineOf({}, initialState(T0 + 10_000, 'chain-2'));
  const mine = fresh.offer(offerOf('c'), T0 + 10_000);
  assert.deepEqual(fresh.forgetRun(ran.runKey), [], 'chain 2 holds none of its rows yet');
  const left = structuredClone(old.state);
  fresh.adopt({ seen: left.seen, ...(left.seenOpeners ? { seenOpeners: left.seenOpeners } : {}), chain: left.chain, newestVersion: left.newestVersion });
  for (const name of ['a', 'x0', 'x599']) {
    const again = fresh.offer(offerOf(name, {}, `after-rearm-${name}`), T0 + 11_000);
    assert.equal(again.duplicate, undefined, `${name} is decided afresh, not answered from the deleted run`);
    assert.notEqual(again.runKey, ran.runKey);
  }
  assert.equal(fresh.offer(offerOf('c', {}, 'resent-c'), T0 + 11_000).runKey, mine.runKey, 'its own stay its own');
});

describe('a coalescer terminated by hand while skips are open (activities/coalescer/recover.ts)', () => {
  /** A skip-policy machine whose live run `a` has taken `b`'s record, not yet `c`'s (in flight) nor `d`'s (owed). */
  function openSkips(): CoalescerMachine {
    const m = withLiveRun({ whileRunning: 'skip' });
    m.offer(offerOf('b'), T0 + 2000);
    m.next(T0 + 2000, false); // b's record goes
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2005); // and stands
    m.offer(offerOf('c'), T0 + 2300);
    m.next(T0 + 2300, false); // c's record goes, and is not answered
    m.offer(offerOf('d'), T0 + 2310); // d's is owed
    return m;
  }

  test('the status a query reads lists the skips that do not stand yet, in the order decided', () => {
    const m = openSkips();
    assert.deepEqual(
      m.skips.openSkips().map((k) => k.event.eventKey),
      ['ev-c', 'ev-d'],
    );
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2400);
    assert.deepEqual(
      m.skips.openSkips().map((k) => k.event.eventKey),
      ['ev-d'],
      'c stands once its record is taken',
    );
  });

  test('the event query names no run for a skip that does not stand yet, and the run once it does', () => {
    const m = openSkips();
    assert.deepEqual(m.known('ev-c'), { decision: 'skipped', coalescerId: m.coalescerId, decidedAtMs: T0 + 2300, unconfirmed: true });
    const runOf = (key: string) => {
      const known = m.known(key);
      return known && 'runKey' in known ? known.runKey : undefined;
    };
    assert.equal(runOf('ev-b'), runKeyOf('a'), 'b stands: its run is named');
    m.skipsRecorded(runKeyOf('a'), true, T0 + 2400);
    assert.equal(runOf('ev-c'), runKeyOf('a'));
  });

  test('a skip its run refused after a re-arm forgot its row: the waiting offer is answered as itself, from the batch that took it', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    assert.equal(m.offer(offerOf('b'), T0 + 2000).decision, 'skipped');
    assert.equal(m.next(T0 + 2000, false).kind, 'record-skipped'); // its record goes to run a
    m.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success' }, T0 + 2001); // a closed before it landed
    assert.ok(m.forgetRun(runKeyOf('a')).includes('ev-b'), 'a person re-armed a: its rows go, the skip of b with them');
    m.skipsRecorded(runKeyOf('a'), false, T0 + 2002); // refused: b is decided again, into a batch
    const answer = m.offer(offerOf('b'), T0 + 2003); // the offer still waiting asks again
    assert.equal(answer.decision, 'started');
    assert.equal(answer.duplicate, undefined, 'not answered as a redelivery of itself');
  });

  test('the recovery offers open skips again and leaves them out of the table it adopts: none is answered from a row nothing confirms', () => {
    const m = openSkips();
    m.offer(offerOf('e'), T0 + 2320); // skipped too: the run is still live
    const status = { state: m.state, openSkips: m.skips.openSkips() };
    assert.deepEqual(
      toOfferAgain(status, false, 'run-1').map((o) => o.event.eventKey),
      ['ev-c', 'ev-d', 'ev-e'],
      'b stands (its record was taken): it is adopted as skipped, not run again',
    );
    // Each under its own offer's id: the gate's resend of that offer (its update failed with the
    // termination) is answered as itself in the new chain, not as a redelivery.
    assert.deepEqual(
      toOfferAgain(status, false, 'run-1').map((o) => o.offerId),
      ['offer-c', 'offer-d', 'offer-e'],
    );
    // Every open skip is in the dedup table as skipped on run a: the recovery's `except` drops those rows.
    const rows = new Map(m.state.seen.map((s) => [s[0], s]));
    for (const key of ['ev-b', 'ev-c', 'ev-d', 'ev-e']) assert.ok(rows.has(key), `${key} has a row`);
  });

  test('a live run that never started hands back its events first, then the open skips, then the pending batch, each once', () => {
    const m = withLiveRun({ whileRunning: 'skip' });
    m.offer(offerOf('b'), T0 + 2000);
    const pending = { runKey: runKeyOf('p'), events: [offerOf('p').event, offerOf('b').event], openedBy: 'ev-p', openedAtMs: T0, lastAtMs: T0 };
    const status = { state: { ...m.state, pending }, openSkips: m.skips.openSkips() };
    assert.deepEqual(
      toOfferAgain(status as unknown as Parameters<typeof toOfferAgain>[0], true, 'run-1').map((o) => o.event.eventKey),
      ['ev-a', 'ev-b', 'ev-p'],
    );
    assert.deepEqual(
      toOfferAgain(status as unknown as Parameters<typeof toOfferAgain>[0], false, 'run-1').map((o) => o.event.eventKey),
      ['ev-b', 'ev-p'],
      'a run that did start keeps its events',
    );
  });
});

describe('a coalescer terminated by hand while its live run held a steered event (activities/coalescer/recover.ts)', () => {
  /** A steer-policy chain whose live run `a` took `b` by a steer: its state as the terminated chain left it. */
  function terminatedWithSteer() {
    const old = withLiveRun({ whileRunning: 'steer' });
    assert.equal(old.offer(offerOf('b'), T0 + 1500).decision, 'steered');
    const step = old.next(T0 + 1500, false);
    assert.equal(step.kind, 'steer');
    old.steerAnswered(runKeyOf('a'), { accepted: ['ev-b'], refused: [] }, [offerOf('b').event], T0 + 1600);
    return structuredClone(old.state);
  }

  test('the run ended: its end, told again by the recovery, sends the event its model never saw to a follow-up batch', () => {
    const left = terminatedWithSteer();
    const fresh = machineOf({ whileRunning: 'steer' }, initialState(T0 + 10_000, 'chain-2'));
    fresh.adopt({ seen: left.seen, ...(left.seenOpeners ? { seenOpeners: left.seenOpeners } : {}), newestVersion: left.newestVersion });
    assert.equal(fresh.lookup('ev-b')?.decision, 'steered', 'adopted as steered into a');
    const ended = runEndedOf(left.running!, { terminalReason: 'budget_exhausted' } as RunResult);
    assert.deepEqual(
      ended.unseenEvents?.map((e) => e.eventKey),
      ['ev-b'],
    );
    assert.equal(fresh.runEnded(ended, T0 + 11_000), true);
    assert.deepEqual(
      fresh.state.pending?.events.map((e) => e.eventKey),
      ['ev-b'],
      'the new chain runs it',
    );
    assert.equal(fresh.lookup('ev-b')?.runKey, fresh.state.pending!.runKey, 'a redelivery is answered from the run that takes it');
    assert.equal(fresh.runEnded(ended, T0 + 11_500), false, 'its second end changes nothing');
  });

  test('the run still live while the new chain has a run of its own: its end, naming nothing, still sends the event its model never saw to a follow-up batch', () => {
    const left = terminatedWithSteer();
    const fresh = machineOf({ whileRunning: 'steer' }, initialState(T0 + 10_000, 'chain-2'));
    fresh.offer(offerOf('z'), T0 + 10_000);
    started(fresh, T0 + 11_000);
    const own = fresh.state.running!.runKey;
    fresh.adopt({ seen: left.seen, newestVersion: left.newestVersion, live: left.running! });
    assert.equal(fresh.state.running?.runKey, own, 'its own run stays its live run');
    // The terminated chain's run ends by its own signal; an event answered steered but never sent to it is not among its unseen.
    assert.equal(fresh.runEnded({ runKey: runKeyOf('a'), terminalReason: 'budget_exhausted', seen: [] }, T0 + 12_000), true);
    assert.deepEqual(
      fresh.state.pending?.events.map((e) => e.eventKey),
      ['ev-b'],
    );
    assert.equal(fresh.state.foreign?.length ?? 0, 0, 'forgotten once ended');
  });

  test('a foreign run is forgotten only once its end is taken: the steered event its model saw never runs again', () => {
    const left = terminatedWithSteer();
    const fresh = machineOf({ whileRunning: 'steer' }, initialState(T0 + 10_000, 'chain-2'));
    fresh.offer(offerOf('z'), T0 + 10_000);
    started(fresh, T0 + 11_000);
    fresh.adopt({ seen: left.seen, newestVersion: left.newestVersion, live: left.running! });
    assert.equal(fresh.state.foreign?.[0]?.runKey, runKeyOf('a'), 'held as a foreign run');
    // A person re-arms a (closed, its end not taken yet): as for the live run, nothing is forgotten yet.
    assert.deepEqual(fresh.forgetRun(runKeyOf('a')), [], 'refused while its end is not taken');
    assert.equal(fresh.lookup('ev-b')?.decision, 'steered');
    // Its end, as the forget's look at it finds it: its model saw b.
    assert.equal(fresh.runEnded({ runKey: runKeyOf('a'), terminalReason: 'success', seen: ['ev-b'] }, T0 + 12_000), false, 'nothing to run again');
    assert.equal(fresh.state.pending, undefined);
    assert.equal(fresh.forgetRun(runKeyOf('a')).length, 2, 'then its events, a and b, are forgotten');
    // The run is deleted; a late look finds it gone: nothing runs again.
    assert.equal(fresh.runEnded({ runKey: runKeyOf('a'), terminalReason: 'failed' }, T0 + 13_000), false);
    assert.equal(fresh.state.pending, undefined, 'b is not run twice');
  });

  test('the run still live: the new chain holds it as its live run, and the recovered batch waits for its end', () => {
    const left = terminatedWithSteer();
    const fresh = machineOf({ whileRunning: 'steer' }, initialState(T0 + 10_000, 'chain-2'));
    fresh.adopt({ seen: left.seen, newestVersion: left.newestVersion, live: left.running! });
    assert.equal(fresh.state.running?.runKey, runKeyOf('a'));
    const c = fresh.offer(offerOf('c'), T0 + 10_100);
    assert.equal(c.decision, 'steered', 'steered into the adopted live run, as before the termination');
    const buffered = machineOf({ whileRunning: 'buffer_one' }, initialState(T0 + 10_000, 'chain-3'));
    buffered.adopt({ seen: [], newestVersion: {}, live: left.running! });
    buffered.offer(offerOf('d'), T0 + 10_100);
    assert.equal(buffered.next(T0 + 60_000, false).kind, 'wait', 'one run of the key at a time');
    assert.equal(buffered.runEnded(runEndedOf(left.running!, { terminalReason: 'success', steered: [] } as unknown as RunResult), T0 + 61_000), true);
    assert.equal(buffered.next(T0 + 61_000, false).kind, 'start');
  });
});

test('skip: the records of skips carry payloads to one run up to a bound over all of them, so a storm cannot grow its history without end', () => {
  const m = withLiveRun({ whileRunning: 'skip', maxEventsPerRun: 10_000 });
  const big = { s: 'x'.repeat(200_000) };
  let carried = 0;
  let bare = 0;
  for (let i = 0; i < 12; i++) {
    const at = T0 + 2000 + i * (SKIPPED_SIGNAL_EVERY_MS + 1);
    assert.equal(m.offer(offerOf(`s${i}`, { payload: big }), at).decision, 'skipped');
    const step = m.next(at + SKIPPED_SIGNAL_EVERY_MS, false);
    assert.equal(step.kind, 'record-skipped');
    for (const e of (step as Extract<NextAction, { kind: 'record-skipped' }>).events) {
      if (e.payload) carried += JSON.stringify(e.payload).length;
      else bare += 1;
    }
    m.skipsRecorded(runKeyOf('a'), true, at + SKIPPED_SIGNAL_EVERY_MS);
  }
  assert.ok(carried <= SKIPPED_PAYLOAD_CHARS, `${carried} characters of payload carried to one run`);
  assert.ok(carried > 0 && bare > 0, 'the first ones with their payloads, the rest without');
});

test('the recovery round looks behind its window: a coalescer whose close visibility listed late is still found (activities/coalescer/recover.ts)', () => {
  const from = Date.parse('2026-12-07T05:00:00.000Z');
  const query = closedCoalescersQuery('tq', from, from + 5_000);
  const lower = Date.parse(/CloseTime > '([^']+)'/.exec(query)![1]!);
  const upper = Date.parse(/CloseTime <= '([^']+)'/.exec(query)![1]!);
  // Closed 1.5 s before this round's window began (the round that covered it ran before visibility listed it).
  const closedAt = from - 1_500;
  assert.ok(lower < closedAt && closedAt <= upper, query);
  assert.equal(upper, from + 5_000);
  assert.match(query, /TaskQueue = 'tq' AND ExecutionStatus IN \('Terminated', 'Canceled', 'Failed', 'TimedOut'\)/);
});
