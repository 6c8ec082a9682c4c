import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CoalescerState, Offer, OfferAnswer } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import { jsonBytes } from '../../src/core/bytes';
import { DELIVERY_IDS_KEPT, deliveriesOf } from '../../src/core/delivery-ids';
import { FIRST_ANSWER_BYTES, RECENT_ANSWER_BYTES, RECENT_ANSWERS } from '../../src/core/coalesce-carried';
import { CoalescerMachine, initialState, type NextAction } from '../../workflows/coalescer/machine';
import { CARRIED_BUDGET_BYTES, carriedInput } from '../../workflows/coalescer/carry';

/*
 * What the coalescer carries across continue-as-new (workflows/coalescer/carry.ts): the whole input
 * within CARRIED_BUDGET_BYTES for any stream, as Temporal encodes it, under the SDK's 512 KiB payload
 * warning; answers to retried offers kept as the facts the seen table does not hold; the live run's
 * events left with its input where nothing needs them. Each turn goes through `carriedInput` and JSON,
 * as the workflow's continue-as-new does.
 */
const T0 = Date.parse('2026-12-02T10:00:00Z');
const PAYLOAD_WARN_BYTES = 512 * 1024;

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
  const input = carriedInput(m.self, m);
  const bytes = payloadBytes(input);
  // Past the bound only when the live run's and the pending batch's events alone are (each holds its
  // newest event whatever its size, up to the gate's 256 KiB): then the seen table is all given up.
  const events = jsonBytes({ ...input, state: { ...input.state, seen: [], seenOpeners: {} } });
  if (events > CARRIED_BUDGET_BYTES) assert.equal(input.state?.seen.length, 0, 'over the bound only with the table given up');
  else {
    assert.ok(jsonBytes(input) <= CARRIED_BUDGET_BYTES, `${jsonBytes(input)} bytes of JSON`);
    assert.ok(bytes <= CARRIED_BUDGET_BYTES + 64 && bytes < PAYLOAD_WARN_BYTES, `${bytes} bytes`);
  }
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

  test(`property: whatever the stream (100-character keys, payloads up to the gate's 256 KiB, each overlap policy), the input stays within ${CARRIED_BUDGET_BYTES} bytes (past it only with the table given up, when the runs' events alone are), and the seen table answers every event it still holds as before`, () => {
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
    const hot = (i: number, delivery = `d-${i}`, offerId = `${hex(i * 7919 + 1)}-1b2c-4d5e-8f90-a1b2c3d4e5f6`): Offer => ({
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
