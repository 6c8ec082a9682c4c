import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CoalescerState, Offer, OfferAnswer } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import { jsonBytes } from '../../src/core/bytes';
import { FIRST_ANSWER_BYTES, LARGEST_EVENT_BYTES, RECENT_ANSWER_BYTES, RECENT_ANSWERS, SEEN_LEAST_SHARE } from '../../src/core/coalesce-carried';
import { whole } from '../../src/core/coalesce-batch';
import { EVENT_LIMITS } from '../../src/gate/limits';
import { DELIVERY_IDS_KEPT, deliveriesOf } from '../../src/core/delivery-ids';
import { CoalescerMachine, dueAt, initialState, type NextAction } from '../../workflows/coalescer/machine';
import { CARRIED_BUDGET_BYTES, carriedInput } from '../../workflows/coalescer/carry';
import { toOfferAgain } from '../../activities/coalescer/recover';

/*
 * What the coalescer carries across continue-as-new (workflows/coalescer/carry.ts): the whole input
 * within CARRIED_BUDGET_BYTES for any stream, as Temporal encodes it, under the SDK's 512 KiB payload
 * warning (past it only with foreign runs held, the seen table at its least share, under Temporal's
 * 2 MiB); answers to retried offers kept as the facts the seen table does not hold; the live run's
 * events carried by their keys where nothing needs their payloads. Each turn goes through
 * `carriedInput` and JSON, as the workflow's continue-as-new does.
 */
const T0 = Date.parse('2026-12-02T10:00:00Z');
const PAYLOAD_WARN_BYTES = 512 * 1024;
/** Temporal refuses a payload past this. */
const BLOB_LIMIT_BYTES = 2 * 1024 * 1024;

const policyOf = (over: Partial<CoalescePolicy> = {}): CoalescePolicy => ({
  debouncePeriodMs: 1000,
  maxWaitMs: 5000,
  whileRunning: 'skip',
  idleCloseMs: 60_000,
  dedupHorizonMs: 3_600_000,
  maxEventsPerRun: 1000,
  ...over,
});
const self = (policy: CoalescePolicy) => ({ agent: 'canary', wakeKey: 'order-7', policy });
const machineOf = (over: Partial<CoalescePolicy> = {}, state: CoalescerState = initialState(T0, '0a1b2c3d')) =>
  new CoalescerMachine(self(policyOf(over)), state);

/** Bytes of the continue-as-new command's Payloads as the SDK measures them (every argument, data and metadata). */
const payloadBytes = (input: unknown) => temporal.api.common.v1.Payloads.encode({ payloads: [defaultPayloadConverter.toPayload(input)] }).finish().length;

/** Continue as new: the input as the workflow sends it, its bytes checked, and the machine the next execution builds from it. */
function turned(m: CoalescerMachine): { next: CoalescerMachine; bytes: number } {
  const table = m.seen.packedChars;
  const input = carriedInput(m.self, m);
  const bytes = payloadBytes(input);
  assert.ok(bytes < BLOB_LIMIT_BYTES, `${bytes} bytes: over Temporal's 2 MiB`);
  // Past the bound only with foreign runs held, the table at its least share (src/core/coalesce-carried.ts).
  if (jsonBytes(input) > CARRIED_BUDGET_BYTES) {
    assert.ok(input.state?.foreign?.length, `${jsonBytes(input)} bytes of JSON, no foreign run held`);
    assert.ok(m.seen.packedChars >= Math.min(table, SEEN_LEAST_SHARE), 'the table gave way below its least share');
  } else assert.ok(bytes <= CARRIED_BUDGET_BYTES + 64 && bytes < PAYLOAD_WARN_BYTES, `${bytes} bytes`);
  return { next: new CoalescerMachine(m.self, JSON.parse(JSON.stringify(input.state)) as CoalescerState), bytes };
}

const hex = (x: number, n = 8) => x.toString(16).padStart(n, '0').slice(-n);

/** An offer as the gate makes it (a UUID offer id). `key` of 100 characters; `padding` makes its payload larger. */
function offerOf(n: number, opts: { offer?: number; padding?: number; fingerprint?: string; delivery?: string } = {}): Offer {
  return {
    event: {
      eventKey: `webhooks/issue.updated/acme%2Fa-long-repository-name-${`${n}`.padStart(5, '0')}-${'x'.repeat(20)}/2026-12-02T10:00:00Z`,
      source: 'webhooks',
      type: 'issue.updated',
      entity: 'order-7',
      occurredAt: '2026-12-02T10:00:00Z',
      bucketStart: '2026-12-02T10:00:00Z',
      deliveryIds: [opts.delivery ?? `d-${n}`],
      payload: { text: 'x'.repeat(opts.padding ?? 0) },
      fingerprint: opts.fingerprint ?? `${hex(n)}${'0'.repeat(56)}`,
    },
    offerId: `${hex(opts.offer ?? n * 7919 + 1)}-0000-4000-8000-000000000000`,
  };
}

/** Carry out what the machine asks until it waits: runs start (`live` holds them), records of skips and steers are delivered. */
function settle(m: CoalescerMachine, now: number, live: Set<string>): void {
  for (let i = 0; i < 50; i++) {
    const step: NextAction = m.next(now, false);
    if (step.kind === 'start') live.add(step.batch.runKey);
    else if (step.kind === 'record-skipped') m.skipsRecorded(step.runKey, true, now);
    else if (step.kind === 'steer') m.steerAnswered(step.runKey, { accepted: step.events.map((e) => e.eventKey), refused: [] }, step.events, now);
    else if (step.kind === 'wait' || step.kind === 'close' || step.kind === 'continue-as-new') return;
  }
}

/** One event of bench:coalesce's hot key (tools/bench/coalesce.ts): 50-character keys, small payloads. */
const hotOffer = (i: number, delivery = `d-${i}`, offerId = `${hex(i * 7919 + 1)}-1b2c-4d5e-8f90-a1b2c3d4e5f6`): Offer => ({
  event: {
    eventKey: `ping/e-${i}/hot-1a2b3c4d/2026-12-02T10:00:00Z`,
    source: 'ping',
    type: `e-${i}`,
    entity: 'hot-1a2b3c4d',
    occurredAt: '2026-12-02T10:00:00Z',
    bucketStart: '2026-12-02T10:00:00Z',
    deliveryIds: [delivery],
    payload: { type: `e-${i}`, entity: 'hot-1a2b3c4d', note: 'x'.repeat(20) },
    fingerprint: `${hex(i)}${'9'.repeat(56)}`,
  },
  offerId,
});

describe("the coalescer's continue-as-new input", () => {
  test('a retried first offer gets its very answer across continue-as-new, kept as a few facts beside its seen entry', () => {
    const m = machineOf();
    const answers: OfferAnswer[] = [];
    for (let i = 0; i < 400; i++) answers.push(m.offer(offerOf(i), T0 + i * 5));
    assert.equal(m.state.recent.length, 0, 'first decisions need no whole answer');
    assert.equal(m.state.firstAnswers?.length, 400);
    assert.ok(jsonBytes(m.state.firstAnswers) <= 400 * FIRST_ANSWER_BYTES, `${jsonBytes(m.state.firstAnswers)} bytes`);
    const { next } = turned(m);
    for (const i of [0, 1, 200, 399]) assert.deepEqual(next.offer(offerOf(i), T0 + 2100), answers[i], `event ${i}`);
    // Another delivery of the same event is a redelivery, and its answer is kept whole (its entry is another offer's).
    const again = next.offer(offerOf(5, { delivery: 'again', offer: 1 }), T0 + 2200);
    assert.equal(again.duplicate, true);
    assert.equal(next.state.recent.length, 1);
    assert.deepEqual(turned(next).next.offer(offerOf(5, { delivery: 'again', offer: 1 }), T0 + 2300), again);
    // A reused key with other inputs is refused, and a retry of that offer is refused the same way.
    const other = next.offer(offerOf(6, { offer: 2, fingerprint: 'f'.repeat(64) }), T0 + 2400);
    assert.equal(other.decision, 'mismatch');
    assert.deepEqual(turned(next).next.offer(offerOf(6, { offer: 2, fingerprint: 'f'.repeat(64) }), T0 + 2500), other);
  });

  test('property: the answers kept stay within their share, and every retry within them gets its first answer', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            retryOf: fc.option(fc.nat(), { nil: undefined }),
            redeliver: fc.boolean(),
            gapMs: fc.integer({ min: 0, max: 400 }),
            turn: fc.boolean(),
          }),
          { minLength: 1, maxLength: 700, size: 'medium' },
        ),
        (steps) => {
          let m = machineOf();
          let now = T0;
          const first: OfferAnswer[] = [];
          const again = new Map<number, OfferAnswer>();
          const live = new Set<string>();
          for (const step of steps) {
            now += step.gapMs;
            if (step.turn) m = turned(m).next;
            if (step.retryOf !== undefined && first.length) {
              const i = step.retryOf % first.length;
              // Within the answers kept (the newest RECENT_ANSWERS), a retry gets exactly its first answer.
              if (first.length - i <= RECENT_ANSWERS) assert.deepEqual(m.offer(offerOf(i), now), first[i], `retry of ${i}`);
              if (step.redeliver) {
                const answer = m.offer(offerOf(i, { offer: 10_000_000 + i }), now);
                assert.equal(answer.duplicate, true);
                assert.equal(answer.decision, first[i]!.decision);
                again.set(i, answer);
              }
            } else first.push(m.offer(offerOf(first.length), now));
            if (m.state.running && m.next(now, false).kind === 'wait') m.runEnded({ runKey: m.state.running.runKey, terminalReason: 'success' }, now);
            else settle(m, now, live);
            assert.ok((m.state.firstAnswers?.length ?? 0) <= RECENT_ANSWERS);
            assert.ok(jsonBytes(m.state.firstAnswers ?? []) <= RECENT_ANSWERS * FIRST_ANSWER_BYTES, `${jsonBytes(m.state.firstAnswers)} bytes`);
            assert.ok(jsonBytes(m.state.recent) <= RECENT_ANSWER_BYTES, `${jsonBytes(m.state.recent)} bytes`);
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  test(`property: whatever the stream (100-character keys, payloads up to the gate's 256 KiB, each overlap policy), the input stays within ${CARRIED_BUDGET_BYTES} bytes (the live run's events carried by their keys), and the seen table answers every event it still holds as before`, () => {
    const step = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({ k: fc.constant('offer' as const), size: fc.constantFrom(0, 300, 5_000, 40_000, 256 * 1024 - 20), gapMs: fc.nat({ max: 3000 }) }),
      },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('burst' as const), n: fc.integer({ min: 100, max: 4000 }), gapMs: fc.integer({ min: 1, max: 8 }) }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('again' as const), of: fc.nat(), retry: fc.boolean(), other: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('end' as const), sawSteered: fc.boolean(), commitBegan: fc.boolean() }) },
      { weight: 3, arbitrary: fc.constant({ k: 'turn' as const }) },
    );
    fc.assert(
      fc.property(
        fc.constantFrom('skip', 'buffer_one', 'cancel', 'steer'),
        fc.array(step, { minLength: 1, maxLength: 30, size: 'medium' }),
        (whileRunning, steps) => {
          let m = machineOf({ whileRunning, maxEventsPerRun: 1000 });
          let now = T0;
          let n = 0;
          const live = new Set<string>();
          const offer = (o: Offer) => {
            m.offer(o, now);
            settle(m, now, live);
          };
          for (const s of steps) {
            if (s.k === 'offer') {
              now += s.gapMs;
              offer(offerOf(n++, { padding: s.size }));
            } else if (s.k === 'burst') {
              for (let i = 0; i < s.n; i++, now += s.gapMs) offer(offerOf(n++, { padding: 200 }));
            } else if (s.k === 'again' && n > 0) {
              const i = s.of % n;
              offer(offerOf(i, { ...(s.retry ? {} : { offer: 10_000_000 + i }), ...(s.other ? { fingerprint: 'e'.repeat(64) } : {}) }));
            } else if (s.k === 'end' && m.state.running) {
              const { runKey, steered } = m.state.running;
              now += 1000;
              m.runEnded(
                { runKey, terminalReason: 'success', seen: s.sawSteered ? (steered ?? []) : [], ...(s.commitBegan ? { commitBegan: true } : {}) },
                now,
              );
              settle(m, now, live);
            } else if (s.k === 'turn') {
              // Every event the table holds is answered after the turn as before, unless the bound let it go (counted).
              const sample = Array.from({ length: 40 }, (_, j) => offerOf(Math.floor((j * n) / 40)).event.eventKey);
              const before = sample.map((k) => m.lookup(k));
              const held = m.state.pending && { keys: m.state.pending.events.map((e) => e.eventKey), overflow: m.state.pending.overflow };
              const forgotten = m.state.counts.forgottenEarly ?? 0;
              m = turned(m).next;
              const pending = m.state.pending && { keys: m.state.pending.events.map((e) => e.eventKey), overflow: m.state.pending.overflow };
              assert.deepEqual(pending, held, 'the pending batch crosses whole');
              sample.forEach((k, j) => {
                const [was, is] = [before[j], m.lookup(k)];
                if (!was) return;
                if (!is) return assert.ok((m.state.counts.forgottenEarly ?? 0) > forgotten, `${k} let go, uncounted`);
                assert.deepEqual([is.decision, is.runKey, is.decidedAtMs], [was.decision, was.runKey, was.decidedAtMs], k);
              });
            }
          }
          turned(m);
        },
      ),
      { numRuns: Number(process.env.CARRIED_RUNS ?? 40) },
    );
  });

  test('a hot wake key as bench:coalesce drives it (10,000 distinct events at 167/s): every input within the bound, the whole stream deduplicated', () => {
    // Its policy and events as in tools/bench/coalesce.ts: 50-character keys, small payloads, a run of a few seconds.
    let m = machineOf({ whileRunning: 'skip', debouncePeriodMs: 1000, maxWaitMs: 5000, maxEventsPerRun: 1000 });
    const hot = hotOffer;
    const live = new Set<string>();
    const first: OfferAnswer[] = [];
    let largest = 0;
    let now = T0;
    for (let i = 0; i < 10_000; i++, now += 6) {
      first.push(m.offer(hot(i), now));
      settle(m, now, live);
      const running = m.state.running;
      if (running && now - running.startedAtMs >= 3000) m.runEnded({ runKey: running.runKey, terminalReason: 'success' }, now);
      // A continue-as-new every 1,000 history events: an update (two events) per few offers.
      if (i % 400 === 399) {
        const t = turned(m);
        largest = Math.max(largest, t.bytes);
        m = t.next;
      }
    }
    assert.ok(largest <= CARRIED_BUDGET_BYTES, `${largest} bytes`);
    assert.equal(m.state.counts.forgottenEarly ?? 0, 0, 'no event let go early');
    assert.equal(m.seen.size, 10_000);
    for (const i of [0, 1, 5000, 9999]) {
      const again = m.offer(hot(i, `again-${i}`, `ffffffff-0000-4000-8000-00000000000${i % 10}`), now);
      assert.deepEqual([again.decision, again.duplicate, again.runKey], [first[i]!.decision, true, first[i]!.runKey], `event ${i}`);
    }
  });

  test('a payload past the batch budget takes its room from the seen table at the turn: its oldest entries go early, counted, and the input stays within the bound', () => {
    const m = machineOf({ whileRunning: 'buffer_one' });
    let now = T0;
    for (let i = 0; i < 8_000; i++, now += 5) {
      m.offer(offerOf(i), now);
      settle(m, now, new Set());
      const running = m.state.running;
      if (running && now - running.startedAtMs >= 3000) m.runEnded({ runKey: running.runKey, terminalReason: 'success' }, now);
    }
    assert.equal(m.state.counts.forgottenEarly ?? 0, 0);
    m.offer(offerOf(8_000, { padding: 256 * 1024 - 20 }), now);
    const { next } = turned(m);
    assert.ok((next.state.counts.forgottenEarly ?? 0) > 0, 'the oldest left early');
    assert.equal(next.seen.size, 8_001 - next.state.counts.forgottenEarly!);
    assert.ok(next.state.seenFloorMs! >= T0, 'the trail states the floor');
    assert.ok(next.lookup(offerOf(8_000).event.eventKey), 'the newest are held');
    assert.ok(
      next.state.pending?.events.some((e) => e.eventKey === offerOf(8_000).event.eventKey),
      'the large event crosses with its batch',
    );
  });

  test('the live run’s events cross the turn: a redelivery is the run’s even once its row is gone', () => {
    // skip, a dedup horizon shorter than the run: the row is pruned while the run is live.
    const s = machineOf({ whileRunning: 'skip', dedupHorizonMs: 60_000 });
    const a = s.offer(offerOf(1), T0);
    settle(s, T0 + 1000, new Set());
    s.next(T0 + 120_000, false);
    const { next: s2 } = turned(s);
    assert.deepEqual(
      s2.state.running?.events.map((e) => e.eventKey),
      [offerOf(1).event.eventKey],
    );
    const again = s2.offer(offerOf(1, { offer: 99 }), T0 + 120_500);
    assert.deepEqual([again.decision, again.duplicate, again.runKey], ['started', true, a.runKey]);
  });
  test('under steer the live run’s steered events cross whole, the rest by their keys; those its model never saw go whole to the follow-up run', () => {
    const m = machineOf({ whileRunning: 'steer' });
    const live = new Set<string>();
    m.offer(offerOf(1, { padding: 100 }), T0);
    settle(m, T0 + 1000, live);
    const runKey = m.state.running!.runKey;
    assert.equal(m.offer(offerOf(2, { padding: 100 }), T0 + 1100).decision, 'steered');
    settle(m, T0 + 1100, live);
    const { next } = turned(m);
    const [first, steered] = next.state.running!.events;
    assert.deepEqual(Object.keys(first!).sort(), ['deliveryIds', 'eventKey', 'fingerprint'], 'the opener by its key');
    assert.ok(steered && whole(steered), 'the steered event whole');
    next.runEnded({ runKey, terminalReason: 'success', seen: [] }, T0 + 5000);
    assert.deepEqual(
      next.state.pending?.events.map((e) => [e.eventKey, e.payload]),
      [[offerOf(2).event.eventKey, offerOf(2, { padding: 100 }).event.payload]],
    );
  });

  test('under cancel the live run’s events cross whole until a restart holds its own copies, then by their keys; a run adopted by its keys is not restarted', () => {
    const m = machineOf({ whileRunning: 'cancel' });
    m.offer(offerOf(1, { padding: 100 }), T0);
    settle(m, T0 + 1000, new Set());
    const { next } = turned(m);
    assert.ok(next.state.running!.events.every(whole), 'whole: a restart may take them');
    next.offer(offerOf(2), T0 + 2000);
    assert.equal(next.state.pending?.supersedes, next.state.running!.runKey);
    assert.deepEqual(
      next.state.pending!.events.map((e) => e.payload),
      [offerOf(1, { padding: 100 }).event.payload, offerOf(2).event.payload],
    );
    const { next: after } = turned(next);
    assert.ok(!after.state.running!.events.some(whole), 'by their keys: the restart holds its copies');
    assert.ok(after.state.pending!.events.every(whole));
    // That chain terminated by hand: the next one adopts its live run as its own, by its keys.
    const b = machineOf({ whileRunning: 'cancel' }, initialState(T0 + 3000, '9f8e7d6c'));
    b.adopt({ seen: [], newestVersion: {}, except: [], live: after.state.running! });
    assert.equal(b.state.running?.runKey, after.state.running!.runKey);
    assert.equal(b.offer(offerOf(3), T0 + 4000).decision, 'started');
    assert.equal(b.state.pending?.supersedes, undefined, 'the event waits for its end');
    assert.ok(b.state.pending!.events.every(whole));
  });

  test('the largest event the gate takes fits the room the seen table’s least share leaves it (LARGEST_EVENT_BYTES)', () => {
    const largest = offerOf(0, { padding: EVENT_LIMITS.maxPayloadBytes - jsonBytes({ text: '' }) });
    assert.equal(jsonBytes(largest.event.payload), EVENT_LIMITS.maxPayloadBytes);
    assert.ok(jsonBytes(largest.event) <= LARGEST_EVENT_BYTES, `${jsonBytes(largest.event)} bytes`);
  });

  test('redeliveries of an event waiting in the pending batch, each under a new delivery id, keep a few ids and count the rest: the input does not grow with them', () => {
    const m = machineOf({ whileRunning: 'buffer_one', debouncePeriodMs: 3_600_000, maxWaitMs: 3_600_000 });
    m.offer(offerOf(1), T0);
    const key = offerOf(1).event.eventKey;
    const redeliver = (from: number, to: number) => {
      for (let n = from; n < to; n++) {
        const delivery = `queue:campaigns:${n}-${'0'.repeat(24)}`;
        // Half by the gate's offer (held by the batch), half by its delivery signal (the delivery queue).
        if (n % 2) m.offer(offerOf(1, { offer: 1_000_000 + n, delivery }), T0 + n);
        else m.redelivered(key, [delivery]);
      }
    };
    // Past the first thousand, the answers kept for retries (RECENT_ANSWER_BYTES) are full too: nothing grows after.
    redeliver(0, 1_000);
    const before = jsonBytes(carriedInput(m.self, m));
    redeliver(1_000, 15_000);
    const input = carriedInput(m.self, m);
    assert.ok(jsonBytes(input) <= CARRIED_BUDGET_BYTES, `${jsonBytes(input)} bytes of JSON`);
    // The same up to the digits of the count and of the newest ids.
    assert.ok(jsonBytes(input) - before <= 2 * DELIVERY_IDS_KEPT, `${jsonBytes(input)} bytes after 15,000 redeliveries, ${before} after 1,000`);
    const [event] = input.state!.pending!.events;
    assert.equal(deliveriesOf(event!), 15_001, 'every delivery counted');
    assert.equal(event!.deliveryIds[0], 'd-1', 'the first delivery kept');
    assert.equal(event!.deliveryIds.at(-1), `queue:campaigns:14999-${'0'.repeat(24)}`, 'the newest kept');
    assert.equal(event!.deliveryIds.length, DELIVERY_IDS_KEPT);
  });
  test('a table adopted from a continue-as-new input (a chain terminated before its first task) keeps its packed rows', () => {
    const a = machineOf();
    for (let n = 1; n <= 300; n++) a.offer(offerOf(n), T0 + n);
    // What activities/coalescer/recover.ts `untakenOf` reads back: the input, its table packed.
    const { seen, seenOpeners, chain, newestVersion } = (JSON.parse(JSON.stringify(carriedInput(a.self, a))) as { state: CoalescerState }).state;
    assert.ok(seen.some((r) => typeof r === 'string' && r.startsWith('!')));
    const b = machineOf({}, initialState(T0 + 10_000, '9f8e7d6c'));
    assert.equal(b.adopt({ seen, ...(seenOpeners ? { seenOpeners } : {}), ...(chain ? { chain } : {}), newestVersion, except: [] }), 300);
    for (const n of [1, 150, 300]) assert.equal(b.offer(offerOf(n, { offer: 424_242 + n }), T0 + 20_000).duplicate, true, `event ${n}`);
  });
});

/*
 * Runs' events crossing a continue-as-new (carry.ts `carriedInput`): the cases where carrying them
 * whole once gave the table up, broke the bound or let a redelivery run twice. Each states what the
 * guarantee or the docs promise.
 */
describe("the coalescer's continue-as-new input: runs' events at the turn", () => {
  const BIG = 256 * 1024 - 20;
  const MIB2 = 2 * 1024 * 1024;
  /** A chain with its live run holding `events` (offered together, started after the debounce). */
  function chainWithLive(over: Partial<CoalescePolicy>, chain: string, at: number, events: Offer[]): { m: CoalescerMachine; answers: OfferAnswer[] } {
    const m = machineOf(over, initialState(at, chain));
    const answers = events.map((o) => m.offer(o, at));
    settle(m, at + 1000, new Set());
    assert.equal(m.state.running?.events.length, events.length, 'its run is live');
    return { m, answers };
  }
  /** What the recovery sends the chain with the key (recover.ts): the terminated chain's table and its open live run. */
  const leftBy = (m: CoalescerMachine) => {
    const { seen, seenOpeners, chain, newestVersion, running } = JSON.parse(JSON.stringify(m.state)) as CoalescerState;
    return { seen, ...(seenOpeners ? { seenOpeners } : {}), ...(chain ? { chain } : {}), newestVersion, except: [], live: running! };
  };

  test('a live run and a next batch each with a large event: the table is kept at the turn, and a redelivery of the run’s event once it has ended is its duplicate', () => {
    const m = machineOf({ whileRunning: 'buffer_one' });
    const live = new Set<string>();
    m.offer(offerOf(1), T0);
    settle(m, T0 + 1000, live);
    m.runEnded({ runKey: m.state.running!.runKey, terminalReason: 'success', seen: [] }, T0 + 2000);
    const b = m.offer(offerOf(2, { padding: BIG }), T0 + 3000);
    settle(m, T0 + 4000, live);
    assert.equal(m.state.running?.runKey, b.runKey);
    m.offer(offerOf(3, { padding: BIG }), T0 + 4500); // the next batch, as docs/ARCHITECTURE.md names the case
    const { next } = turned(m);
    assert.ok(next.seen.size > 0, 'the table kept: the live run crosses by its events’ keys');
    next.runEnded({ runKey: b.runKey!, terminalReason: 'success', seen: [] }, T0 + 10_000);
    settle(next, T0 + 10_000, live);
    // 20 s after its decision, the horizon an hour: the sender's retry of the large event.
    const again = next.offer(offerOf(2, { offer: 99 }), T0 + 20_000);
    assert.deepEqual([again.decision, again.duplicate, again.runKey], ['started', true, b.runKey], 'event 2 decided afresh: a second run of it');
  });

  test('a foreign run (a terminated chain’s live run, adopted while this chain had its own): its events cross the turn and answer its redeliveries once their rows are gone', () => {
    // The change's own case (a dedup horizon shorter than the run), the run adopted as foreign.
    const policy = { whileRunning: 'buffer_one' as const, dedupHorizonMs: 60_000 };
    const { m: a, answers } = chainWithLive(policy, '0a1b2c3d', T0, [offerOf(1)]);
    // Chain A is terminated by hand; a new offer starts chain B, whose run starts before the recovery's round.
    const { m: b } = chainWithLive(policy, '9f8e7d6c', T0 + 1500, [offerOf(2)]);
    b.adopt(leftBy(a));
    assert.equal(b.state.foreign?.[0]?.runKey, answers[0]!.runKey);
    b.next(T0 + 120_000, false); // both runs still live; the rows pass the horizon
    const { next } = turned(b);
    assert.deepEqual(
      next.state.foreign?.[0]?.events.map((e) => e.eventKey),
      [offerOf(1).event.eventKey],
      'its events crossed',
    );
    const again = next.offer(offerOf(1, { offer: 99 }), T0 + 120_500);
    assert.deepEqual([again.decision, again.duplicate, again.runKey], ['started', true, answers[0]!.runKey], 'event 1 decided afresh while its run is live');
  });

  test('a foreign run’s large event beside the live run’s, no next batch: the input stays within the bound, the table kept', () => {
    const { m: a } = chainWithLive({ whileRunning: 'buffer_one' }, '0a1b2c3d', T0, [offerOf(1, { padding: BIG })]);
    // Chain B: a run of 300 small events has ended, a run of one large event is live; no next batch.
    const b = machineOf({ whileRunning: 'buffer_one' }, initialState(T0 + 1500, '9f8e7d6c'));
    const live = new Set<string>();
    for (let i = 3; i < 303; i++) b.offer(offerOf(i), T0 + 1500);
    settle(b, T0 + 2500, live);
    b.runEnded({ runKey: b.state.running!.runKey, terminalReason: 'success', seen: [] }, T0 + 3000);
    b.offer(offerOf(2, { padding: BIG }), T0 + 3000);
    settle(b, T0 + 4000, live);
    b.adopt(leftBy(a));
    assert.ok(b.state.foreign?.length === 1 && !b.state.pending && b.seen.size === 302);
    const input = carriedInput(b.self, b);
    assert.ok(
      jsonBytes(input) <= CARRIED_BUDGET_BYTES && input.state!.seen.length > 0,
      `${jsonBytes(input)} bytes of JSON; the table ${input.state!.seen.length ? 'kept' : 'given up whole'}`,
    );
  });

  test('foreign runs each with a large event: the continue-as-new input stays under Temporal’s 2 MB blob limit', () => {
    const { m: b } = chainWithLive({ whileRunning: 'buffer_one' }, '9f8e7d6c', T0, [offerOf(1, { padding: BIG })]);
    for (let i = 0; i < 8; i++) {
      const { m: a } = chainWithLive({ whileRunning: 'buffer_one' }, `${hex(0xa0 + i)}`, T0 + 100 * i, [offerOf(100 + i, { padding: BIG })]);
      b.adopt(leftBy(a));
    }
    assert.equal(b.state.foreign?.length, 8);
    const input = carriedInput(b.self, b);
    assert.ok(payloadBytes(input) < MIB2, `${payloadBytes(input)} bytes: the server refuses the continue-as-new`);
  });

  test('redeliveries of the live run’s event, each a delivery of its own: their ids gather on the run’s events, which cross every turn past the batch’s share and past the bound', () => {
    // skip, as the change's own case; the sender redelivers event 1 while its (long) run is live.
    let m = machineOf({ whileRunning: 'skip' });
    for (let i = 2; i < 302; i++) m.offer(offerOf(i), T0); // a table of 300 rows beside it
    const live = new Set<string>();
    settle(m, T0 + 1000, live);
    m.runEnded({ runKey: m.state.running!.runKey, terminalReason: 'success', seen: [] }, T0 + 1500);
    const first = m.offer(offerOf(1), T0 + 2000);
    settle(m, T0 + 3000, live);
    let now = T0 + 3000;
    for (let d = 0; d < 12_000; d++, now += 250) {
      const again = m.offer(offerOf(1, { offer: 20_000_000 + d, delivery: `${hex(d)}-5e6f-4a7b-8c9d-${hex(d, 12)}` }), now);
      assert.equal(again.runKey, first.runKey);
      if (d % 400 === 399) m = new CoalescerMachine(m.self, JSON.parse(JSON.stringify(carriedInput(m.self, m).state)) as CoalescerState);
    }
    const input = carriedInput(m.self, m);
    assert.ok(
      jsonBytes(input) <= CARRIED_BUDGET_BYTES && input.state!.seen.length > 0,
      `${jsonBytes(input)} bytes of JSON (the live run's one event: ${jsonBytes(input.state!.running?.events)}); the table ${input.state!.seen.length ? 'kept' : 'given up whole'}`,
    );
  });

  test('a hot key under buffer_one (bench:coalesce’s stream, 50-character keys): 10,000 events held, none let go early, as docs/OPERATIONS.md states', () => {
    let m = machineOf({ whileRunning: 'buffer_one', debouncePeriodMs: 1000, maxWaitMs: 5000, maxEventsPerRun: 1000 });
    const hot = (i: number) => hotOffer(i);
    let now = T0;
    for (let i = 0; i < 10_000; i++, now += 6) {
      m.offer(hot(i), now);
      settle(m, now, new Set());
      const running = m.state.running;
      if (running && now - running.startedAtMs >= 3000) m.runEnded({ runKey: running.runKey, terminalReason: 'success', seen: [] }, now);
      if (i % 400 === 399) m = turned(m).next;
    }
    assert.equal(m.state.counts.forgottenEarly ?? 0, 0, 'events let go early at a turn, under the stated capacity');
  });
});

/*
 * Runs' events kept by their keys, past the turn, meeting an operator's hand: what a recovery of a
 * terminated chain (activities/coalescer/recover.ts) sends the chain with the key, and what that
 * chain does with the events again.
 */
describe("the coalescer's continue-as-new input: a run kept by its keys, its chain terminated by hand", () => {
  /** The recovery's messages, as recoverOne sends them (the run still open): the table with the live run, then the events offered again. */
  function recovered(left: CoalescerMachine, into: CoalescerMachine, nowMs: number): OfferAnswer[] {
    const state = JSON.parse(JSON.stringify(left.state)) as CoalescerState;
    const offers = toOfferAgain({ state, openSkips: [] }, false, 'run-terminated');
    const { seen, seenOpeners, chain, newestVersion, running } = state;
    into.adopt({
      seen,
      ...(seenOpeners ? { seenOpeners } : {}),
      ...(chain ? { chain } : {}),
      newestVersion,
      except: offers.map((o) => o.event.eventKey),
      live: running!,
    });
    return offers.map((o) => into.offer(o, nowMs));
  }

  /** Chain A under cancel: run R1 of event 1 live, event 2's restart batch opened, R1 told it is superseded. */
  function superseding(): { a: CoalescerMachine; r1: string; live: Set<string> } {
    const a = machineOf({ whileRunning: 'cancel' });
    const live = new Set<string>();
    a.offer(offerOf(1, { padding: 100 }), T0);
    settle(a, T0 + 1000, live);
    const r1 = a.state.running!.runKey;
    a.offer(offerOf(2), T0 + 2000);
    assert.equal(a.state.pending?.supersedes, r1);
    assert.equal(a.next(T0 + 2000, false).kind, 'supersede');
    return { a, r1, live };
  }

  for (const turn of [false, true])
    test(`under cancel, a run superseded by a restart batch, its chain terminated ${turn ? 'after' : 'before'} a continue-as-new while the run cancels itself: its events run in the next chain`, () => {
      // Event 2 restarts the run: the restart batch holds event 1's copy, the run is told it is superseded.
      const { a, r1, live } = superseding();
      // Temporal suggests a continue-as-new (or not), then a person terminates the chain; the run is still cancelling itself.
      const left = turn ? turned(a).next : a;
      const b = machineOf({ whileRunning: 'cancel' }, initialState(T0 + 3000, '9f8e7d6c'));
      recovered(left, b, T0 + 3500);
      // The run ends cancelled (it took the supersede before the termination): event 1 ran nowhere.
      b.runEnded({ runKey: r1, terminalReason: 'cancelled', seen: [] }, T0 + 4000);
      settle(b, T0 + 60_000, live);
      const held = [...(b.state.pending?.events ?? []), ...(b.state.running?.runKey !== r1 ? (b.state.running?.events ?? []) : [])];
      assert.deepEqual(
        held
          .filter(whole)
          .map((e) => e.eventKey)
          .sort(),
        [offerOf(1).event.eventKey, offerOf(2).event.eventKey].sort(),
        'event 1 was answered as its cancelled run’s and is run by no batch: lost',
      );
    });

  test('under cancel, a run superseded by a restart batch, its chain terminated while the run cancels itself and the next chain has a run of its own: its events run in the next chain', () => {
    const { a, r1, live } = superseding();
    // A person terminates the chain (no continue-as-new: every event whole); a new event starts the next chain, whose run starts first.
    const b = machineOf({ whileRunning: 'cancel' }, initialState(T0 + 2500, '9f8e7d6c'));
    b.offer(offerOf(3), T0 + 2500);
    settle(b, T0 + 3500, live);
    const rb = b.state.running!.runKey;
    recovered(a, b, T0 + 4000);
    assert.equal(b.state.foreign?.[0]?.runKey, r1, 'the terminated chain’s run held as foreign');
    b.runEnded({ runKey: r1, terminalReason: 'cancelled', seen: [] }, T0 + 4500);
    b.runEnded({ runKey: rb, terminalReason: 'cancelled', seen: [] }, T0 + 5000);
    settle(b, T0 + 60_000, live);
    const held = [...(b.state.pending?.events ?? []), ...(b.state.running?.runKey !== rb ? (b.state.running?.events ?? []) : [])];
    assert.ok(
      held.some((e) => e.eventKey === offerOf(1).event.eventKey),
      `event 1 was answered as the foreign run’s (cancelled) and is run by no batch: lost; held now: ${held.map((e) => e.eventKey.slice(53, 58))}`,
    );
  });

  test('under cancel, a run superseded by a restart batch, its chain terminated while the run cancels itself and the next chain has a batch waiting: its events run in the next chain', () => {
    const { a, r1 } = superseding();
    // No continue-as-new: every event whole. A new event starts the next chain, its batch still debouncing at the recovery.
    const b = machineOf({ whileRunning: 'cancel', debouncePeriodMs: 30_000 }, initialState(T0 + 2500, '9f8e7d6c'));
    b.offer(offerOf(3), T0 + 2500);
    recovered(a, b, T0 + 4000);
    assert.equal(b.state.running?.runKey, r1, 'the terminated chain’s run held as live');
    b.runEnded({ runKey: r1, terminalReason: 'cancelled', seen: [] }, T0 + 4500);
    const held = b.state.pending?.events ?? [];
    assert.ok(
      held.some((e) => e.eventKey === offerOf(1).event.eventKey),
      `event 1 was answered as its cancelled run’s and is run by no batch: lost; held now: ${held.map((e) => e.eventKey.slice(53, 58))}`,
    );
  });

  for (const own of [false, true])
    test(`under cancel, a run superseded by a restart batch, its chain terminated while the run had begun committing${own ? ' and the next chain has a run of its own' : ''}: the run's events leave the restart, the later ones run`, () => {
      const { a, r1, live } = superseding();
      const left = turned(a).next;
      const b = machineOf({ whileRunning: 'cancel' }, initialState(T0 + 3000, '9f8e7d6c'));
      if (own) {
        b.offer(offerOf(3), T0 + 3000);
        settle(b, T0 + 4000, live);
      }
      const rb = b.state.running?.runKey;
      assert.equal(rb !== undefined, own);
      recovered(left, b, T0 + 4100);
      if (own) assert.equal(b.state.foreign?.[0]?.runKey, r1, 'the terminated chain’s run held as foreign');
      // A redelivery of event 1 meanwhile is answered from the batch that waits for the run's end, not as that run's.
      const again = b.offer({ ...offerOf(1, { padding: 100 }), offerId: 'redelivered' }, T0 + 4200);
      assert.equal(again.runKey, b.state.pending?.runKey);
      assert.equal(b.next(T0 + 60_000, false).kind, 'wait', 'the restart waits for the run’s end');
      // The run had begun committing: it refused its supersede and ran event 1.
      b.runEnded({ runKey: r1, terminalReason: 'success', seen: [], commitBegan: true }, T0 + 4500);
      if (rb) b.runEnded({ runKey: rb, terminalReason: 'success', seen: [] }, T0 + 5000);
      const step = b.next(T0 + 60_000, false);
      assert.equal(step.kind, 'start');
      const started = step.kind === 'start' ? step.batch.events.map((e) => e.eventKey) : [];
      assert.deepEqual(started, [offerOf(2).event.eventKey], 'event 1 ran once, in its own run; event 2 runs');
      assert.equal(b.lookup(offerOf(1).event.eventKey)?.runKey, r1, 'event 1 is answered as the run that ran it');
    });
});

describe("the coalescer's continue-as-new input: the bound with a live run's redelivered events by their keys", () => {
  test('a live run of small events each redelivered under long delivery ids (the gate takes 200 characters), a next batch with the largest event: no foreign run, and the input stays within the bound', () => {
    const m = machineOf({ whileRunning: 'buffer_one' });
    const live = new Set<string>();
    const n = 150;
    // Events decided within the horizon before (their runs ended): a table past its least share.
    for (let i = 10_000; i < 14_000; i++) m.offer(offerOf(i), T0 - 600_000 + i);
    settle(m, T0 - 500_000, live);
    m.runEnded({ runKey: m.state.running!.runKey, terminalReason: 'success', seen: [] }, T0 - 400_000);
    for (let i = 1; i <= n; i++) m.offer(offerOf(i), T0);
    settle(m, T0 + 1000, live);
    assert.equal(m.state.running?.events.length, n, 'one run of them all, within the batch budget');
    // The sender redelivers each event twice while the run is live, each delivery under an id of its own.
    for (let i = 1; i <= n; i++)
      for (const d of [1, 2]) m.offer(offerOf(i, { offer: 1_000_000 + 10 * i + d, delivery: `${d}-${i}-`.padEnd(200, 'd') }), T0 + 2000);
    // The next batch: one event as large as the gate takes.
    m.offer(offerOf(9999, { padding: 256 * 1024 - 20 }), T0 + 3000);
    const input = carriedInput(m.self, m);
    assert.equal(input.state?.foreign, undefined, 'no run adopted from a terminated chain');
    assert.ok(
      jsonBytes(input) <= CARRIED_BUDGET_BYTES,
      `${jsonBytes(input)} bytes of JSON (the live run's events by their keys: ${jsonBytes(input.state!.running!.events)}; the table at ${m.seen.packedChars}): past the bound with no foreign run, as docs/ARCHITECTURE.md and ADR 006 say only foreign runs may`,
    );
  });
});

describe("the coalescer's answers to retried offers: first answers kept by their offer's slot", () => {
  test('two recovered offers whose ids share a 32-bit hash (a pair found among 80,000 recoveries of two events): a retry of each gets its own decision and run and where that run stands now, never the other offer’s first answer', () => {
    // recovered:<runId>:<eventKey> ids of two recoveries whose slots (firstAnswerSlot) are equal.
    const idOne = `recovered:run-78823:${offerOf(1).event.eventKey}`;
    const idTwo = `recovered:run-58533:${offerOf(2).event.eventKey}`;
    const m = machineOf({ whileRunning: 'buffer_one', debouncePeriodMs: 1000, maxWaitMs: 5000 });
    m.offer(offerOf(0), T0);
    const one = { ...offerOf(1), offerId: idOne };
    const two = { ...offerOf(2), offerId: idTwo };
    const firstOne = m.offer(one, T0 + 100);
    const firstTwo = m.offer(two, T0 + 4500);
    assert.deepEqual([firstOne.decision, firstOne.startsInMs, firstTwo.decision, firstTwo.startsInMs], ['coalesced', 1000, 'coalesced', 500]);
    // Their slot is ambiguous: each retry reads where its batch stands now.
    const now = { runState: 'pending', startsInMs: dueAt(m.state.pending!, m.self.policy) - (T0 + 4600) };
    assert.deepEqual(m.offer(structuredClone(two), T0 + 4600), { ...firstTwo, ...now });
    assert.deepEqual(m.offer(structuredClone(one), T0 + 4600), { ...firstOne, ...now }, 'the retry of the first offer is answered as itself');
  });
});
