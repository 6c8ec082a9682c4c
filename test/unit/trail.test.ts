import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CoalescerState, Offer, OfferAnswer, SeenEvent } from '../../src/core/coalesce-types';
import { EFFECT_OUTCOMES, LANDED_OUTCOMES, type EffectOutcome } from '../../src/core/contracts';
import { effectKey } from '../../src/core/ids';
import type { AbsorbedEvent, RunInput, RunResult } from '../../src/core/run-types';
import { trailTable } from '../../src/cli/trail-table';
import { timelineSvg } from '../../src/console/wake-timeline';
import { assembleTrail, NOT_RECORDED } from '../../src/trail/assemble';
import { answersFromHistory } from '../../src/trail/coalescer';
import { argsDigest, effectsOf, runFacts, type RecordedEvent } from '../../src/trail/history';
import { literal, runsQuery } from '../../src/trail/read';
import type { Recorded, RecordedCoalescer, RecordedRun } from '../../src/trail/recorded';
import { agentOf, TrailRequestError, windowStart } from '../../src/trail/trail';
import { exampleAgents } from '../helpers/app';
import { initialState } from '../../workflows/coalescer/batch';

/*
 * The decision trail's rules without a server: the assembly is fed the shapes Temporal records
 * (the coalescer's state and dedup table, runs' inputs, results and histories) written by hand.
 * test/processes/explain.test.ts reads them from a real dev server, through the CLI and the page.
 */

const AGENT = 'campaign-reporter';
const WAKE = 'c1';
const at = (s: number) => new Date(Date.parse('2026-12-02T15:00:00Z') + s * 1000).toISOString();

function ev(type: string, occurred: string, extra: Partial<AbsorbedEvent> = {}): AbsorbedEvent {
  return {
    eventKey: `campaigns/${type}/${WAKE}/${occurred}`,
    source: 'campaigns',
    type,
    entity: WAKE,
    occurredAt: occurred,
    deliveryIds: [`d-${type}`],
    ...extra,
  };
}
const change = ev('config.changed', '2026-12-02T14:05:00Z', { version: 8, deliveryIds: ['hook-a'] });
const report = ev('report.due', '2026-12-02T14:06:00Z', { deliveryIds: ['queue:campaigns:1-0'] });
const older = ev('config.changed', '2026-12-02T14:01:00Z', { version: 6, deliveryIds: ['hook-old'] });
const RUN = `${AGENT}#${WAKE}@${change.eventKey}`;

/** The coalescer's dedup-table entry for an event it decided `arrivedS` into the trail's clock. */
function seen(e: AbsorbedEvent, arrivedS: number, answer: OfferAnswer): SeenEvent {
  const row: SeenEvent = [e.eventKey, 'fp', Date.parse(at(arrivedS)), answer.decision];
  const opener = answer.runKey?.slice(`${AGENT}#${WAKE}@`.length);
  if (opener && opener !== e.eventKey) row.push(opener);
  return row;
}

/** The open coalescer, answering its query with `state` (an empty one by default). */
function coalescer(state: Partial<CoalescerState>): RecordedCoalescer {
  const full: CoalescerState = { ...initialState(0), ...state };
  return { workflowId: `${AGENT}#${WAKE}`, status: 'RUNNING', readVia: 'query', policy: POLICY, state: full, seenCount: full.seen.length };
}
const POLICY = {
  debouncePeriodMs: 4000,
  maxWaitMs: 20_000,
  whileRunning: 'skip' as const,
  idleCloseMs: 3_600_000,
  dedupHorizonMs: 86_400_000,
  maxEventsPerRun: 1000,
};
const taken = (decision: 'started' | 'coalesced', runKey = RUN): OfferAnswer => ({ decision, coalescerId: `${AGENT}#${WAKE}`, runKey, runState: 'pending' });

function batchInput(runKey: string, events: AbsorbedEvent[], extra: Partial<Extract<RunInput['origin'], { kind: 'batch' }>> = {}): RunInput {
  const opener = events[0]!;
  return {
    runKey,
    wakeKey: WAKE,
    eventKey: opener.eventKey,
    source: opener.source,
    entity: opener.entity,
    type: opener.type,
    occurredAt: opener.occurredAt,
    bucketStart: opener.occurredAt,
    agent: AGENT,
    payload: {},
    fingerprint: 'fp',
    origin: { kind: 'batch', coalescerId: `${AGENT}#${WAKE}`, absorbed: events.map((e) => ({ ...e, payload: {} })), ...extra },
  };
}

function run(runKey: string, input: RunInput, result: Partial<RunResult> | undefined, history: RecordedEvent[] = [], startS = 5): RecordedRun {
  return {
    workflowId: runKey,
    runId: `r-${runKey}`,
    status: result ? 'COMPLETED' : 'RUNNING',
    startedAt: at(startS),
    ...(result ? { closedAt: at(startS + 2) } : {}),
    input,
    ...(result
      ? { result: { runKey, eventKey: input.eventKey, agent: AGENT, wakeKey: WAKE, summary: 'ok', deliveryIds: [], deliveryCount: 1, ...result } as RunResult }
      : {}),
    history,
  };
}

function recorded(over: Partial<Recorded>): Recorded {
  return {
    agent: AGENT,
    wakeKey: WAKE,
    path: 'coalescing',
    since: at(-3600),
    until: at(60),
    runs: [],
    runsNotRead: 0,
    coalescers: [],
    eventsNotRead: 0,
    looked: ['visibility: …'],
    ...over,
  };
}

/** A commit of one effect in a run's history, scheduled as event `id`. */
function commit(
  id: string,
  runKey: string,
  name: string,
  step: number,
  cls: 'provider_key' | 'reconcile',
  reversible: boolean,
  args: Record<string, unknown>,
): RecordedEvent {
  return {
    kind: 'activity',
    id,
    at: at(6),
    activityType: 'commitEffect',
    input: {
      agent: AGENT,
      effectKey: effectKey(runKey, name, 'n0') /* each name once: its first slot */,
      effect: { name, class: cls, reversible },
      args,
      run: { runKey, wakeKey: WAKE, entity: WAKE, eventKey: 'k' },
    },
  };
}
const outcome = (runKey: string, name: string, step: number, cls: EffectOutcome['class']): EffectOutcome => ({
  effectKey: effectKey(runKey, name, 'n0') /* each name once: its first slot */,
  name,
  class: cls,
  outcome: 'applied',
  ref: `${name}-ref`,
  attempt: 1,
});
const POLICY_READ: RecordedEvent[] = [
  { kind: 'activity', id: '5', at: at(5), activityType: 'prepareRun', input: {} },
  {
    kind: 'activity-done',
    scheduledId: '5',
    at: at(5),
    result: {
      policy: {
        budget: { turns: 6, tokens: 40_000, toolCalls: 12, wallClockMs: 1000, costUsd: 0.5 },
        effects: [
          { name: 'post_summary', class: 'provider_key', reversible: true },
          { name: 'start_export', class: 'reconcile', reversible: false },
        ],
        approval: { irreversible: 'required', timeoutMs: 1000 },
      },
    },
  },
];

describe('the decision trail, assembled from recorded shapes', () => {
  test("the seed's incident: three events into one run with their deliveries, a stale one behind version 8, the run's effects and approval", () => {
    const tick: AbsorbedEvent = {
      eventKey: 'schedule/tick/s1/2026-12-02T15:00:00Z',
      source: 'schedule',
      type: 'tick',
      entity: 's1',
      occurredAt: at(0),
      deliveryIds: ['wakegate-tick/s1'],
    };
    const staged = [
      { effect: 'post_summary', args: { text: 'hi' } },
      { effect: 'start_export', args: { campaign: WAKE } },
    ];
    const history: RecordedEvent[] = [
      ...POLICY_READ,
      { kind: 'child', at: at(5), workflowId: `${RUN}/sub/spend` },
      { kind: 'child-done', at: at(6), workflowId: `${RUN}/sub/spend`, result: { spent: { turns: 1, toolCalls: 1 } } },
      { kind: 'activity', id: '9', at: at(6), activityType: 'modelTurn' },
      { kind: 'activity-done', scheduledId: '9', at: at(6) },
      commit('11', RUN, 'post_summary', 0, 'provider_key', true, { text: 'hi' }),
      { kind: 'activity-done', scheduledId: '11', at: at(6), result: outcome(RUN, 'post_summary', 0, 'provider_key') },
      { kind: 'signal', at: at(6), name: 'approve', input: { who: 'ana', reason: 'looked' } },
      commit('14', RUN, 'start_export', 1, 'reconcile', false, { campaign: WAKE }),
      { kind: 'activity-done', scheduledId: '14', at: at(7), result: outcome(RUN, 'start_export', 1, 'reconcile') },
    ];
    const t = assembleTrail(
      recorded({
        coalescers: [
          coalescer({
            seen: [
              seen(change, 1, taken('started')),
              seen(report, 1.1, taken('coalesced')),
              seen(tick, 1.2, taken('coalesced')),
              seen(older, 2, { decision: 'stale', coalescerId: `${AGENT}#${WAKE}` }),
            ],
            recent: [{ eventKey: older.eventKey, answer: { decision: 'stale', coalescerId: `${AGENT}#${WAKE}`, newestVersion: 8 } }],
            staleEvents: [older],
          }),
        ],
        runs: [
          run(
            RUN,
            batchInput(RUN, [change, report, tick]),
            {
              terminalReason: 'success',
              // A redelivery of the change while the batch was pending: on the run's own record of the event.
              absorbed: [{ ...change, deliveryIds: ['hook-a', 'hook-a-retry'] }, report, tick],
              skipped: [],
              usage: { turns: 2, tokens: 600, toolCalls: 3, costUsd: 0.002, wallClockMs: 900 },
              output: { staged, committed: [outcome(RUN, 'post_summary', 0, 'provider_key'), outcome(RUN, 'start_export', 1, 'reconcile')] },
            },
            history,
          ),
        ],
      }),
      { maxEvents: 200 },
    );
    assert.equal(t.found, true);
    assert.deepEqual(
      t.events.map((e) => [e.source, e.type, e.decision, e.runKey ?? null]),
      [
        ['campaigns', 'config.changed', 'started', RUN],
        ['campaigns', 'report.due', 'coalesced', RUN],
        ['schedule', 'tick', 'coalesced', RUN],
        ['campaigns', 'config.changed', 'stale', null],
      ],
    );
    assert.deepEqual(t.events[0]!.deliveryIds, ['hook-a', 'hook-a-retry']);
    assert.deepEqual(t.events[0]!.recordedBy, ['coalescer', 'run']);
    assert.match(t.events[0]!.reason, /opened the batch of run .*, which ended success/);
    assert.equal(t.events[3]!.newestVersion, 8);
    assert.match(t.events[3]!.reason, /version 6 is behind version 8 already seen from campaigns/);
    const [r] = t.runs;
    assert.deepEqual([r!.modelTurns, r!.toolCalls, r!.subagents, r!.budget?.turns], [2, 1, 1, 6]);
    assert.deepEqual(r!.absorbed, [change.eventKey, report.eventKey, tick.eventKey]);
    assert.deepEqual(
      r!.effects.map((f) => [f.effect, f.class, f.outcome, f.approval.required, f.approval.decision ?? null, f.approval.who ?? null]),
      [
        ['post_summary', 'provider_key', 'applied', false, null, null],
        ['start_export', 'reconcile', 'applied', true, 'approved', 'ana'],
      ],
    );
    assert.equal(r!.effects[1]!.argsDigest, argsDigest({ campaign: WAKE }));
    assert.equal(r!.effects[1]!.at, at(7));
    assert.deepEqual(t.notRecorded, Object.values(NOT_RECORDED));
  });

  test('an event seen only by the coalescer is named from its key; one that arrived before the window is left out; past the cap the newest are kept and the rest counted', () => {
    const early = ev('config.changed', '2026-12-02T10:00:00Z', { version: 1 });
    const c = coalescer({
      seen: [seen(early, -7200, taken('started', `${AGENT}#${WAKE}@${early.eventKey}`)), seen(change, 1, taken('started'))],
      recent: [{ eventKey: report.eventKey, answer: taken('coalesced') }],
      counts: { offered: 3, started: 1, coalesced: 2, skipped: 0, stale: 0, runs: 1 },
    });
    const state = c.state!;
    const base = recorded({ since: at(0), coalescers: [{ ...c, seenCount: 4 }], eventsNotRead: 2 });
    const t = assembleTrail(base, { maxEvents: 200 });
    // An event with no recorded arrival is placed at its run's start, else at when it happened.
    assert.deepEqual(
      t.events.map((e) => e.eventKey),
      [report.eventKey, change.eventKey],
    );
    const fromKey = t.events[0]!;
    assert.deepEqual(
      [fromKey.source, fromKey.type, fromKey.occurredAt, fromKey.arrivedAt, fromKey.recordedBy],
      ['campaigns', 'report.due', '2026-12-02T14:06:00Z', null, ['coalescer']],
    );
    assert.equal(t.eventsNotListed, 2);
    assert.deepEqual(t.coalescer?.counts, state.counts);

    const capped = assembleTrail(base, { maxEvents: 1 });
    assert.deepEqual(
      capped.events.map((e) => e.eventKey),
      [change.eventKey],
    );
    assert.equal(capped.eventsNotListed, 3);
  });

  test('a batch the coalescer has not started is a pending run until its debounce ends; a run cancelled for a restart leads to the run that took its events', () => {
    const pendingKey = `${AGENT}#${WAKE}@${report.eventKey}`;
    const opened = Date.parse(at(10));
    const state: CoalescerState = {
      newestVersion: {},
      recent: [],
      seen: [seen(change, 1, taken('started'))],
      lastActivityMs: opened,
      counts: { offered: 1, started: 1, coalesced: 0, skipped: 0, stale: 0, runs: 0 },
      runs: [],
      staleEvents: [],
      pending: {
        runKey: pendingKey,
        openedBy: report.eventKey,
        openedAtMs: opened,
        lastAtMs: opened + 1000,
        events: [{ ...report, payload: {}, fingerprint: 'fp', bucketStart: report.occurredAt }],
        overflow: 0,
        supersedes: RUN,
      },
    };
    const t = assembleTrail(
      recorded({
        runs: [run(RUN, batchInput(RUN, [change]), { terminalReason: 'cancelled', absorbed: [change], skipped: [], supersededBy: pendingKey })],
        coalescers: [{ workflowId: `${AGENT}#${WAKE}`, status: 'RUNNING', readVia: 'query', policy: POLICY, state }],
      }),
      { maxEvents: 200 },
    );
    const pending = t.runs.find((r) => r.status === 'PENDING')!;
    assert.equal(pending.runKey, pendingKey);
    assert.equal(pending.closedAt, new Date(opened + 1000 + POLICY.debouncePeriodMs).toISOString());
    assert.equal(pending.supersedes, RUN);
    const [first, second] = t.events;
    assert.equal(first!.finalRunKey, pendingKey, 'the change was carried into the restart');
    // Not in the dedup table read (older than the cap, say): the coalescer's pending batch says it opened the batch.
    assert.equal(second!.decision, 'started');
    assert.equal(second!.runKey, pendingKey);
    assert.match(second!.reason, /pending until/);
  });

  test('one-call path: a run held by a trip is `held` by that trip; a window its Schedule started, that had already run, is `completed` from the run that took it', () => {
    const input = (key: string): RunInput => ({ ...batchInput(key, [change]), origin: { kind: 'event' }, deliveryId: 'd1' });
    const heldRun = run(`canary@${change.eventKey}`, input(`canary@${change.eventKey}`), {
      terminalReason: 'success',
      deliveryIds: ['d1', 'd2'],
      held: {
        hold: 'halted',
        reason: 'the supervisor is halted (trip #7: storm); a person resets it and releases held wakes',
        heldAt: at(5),
        releasedAt: at(9),
        releasedBy: { who: 'robin', reason: 'checked' },
      },
    });
    // A window its Temporal Schedule started itself: the input names no event; the run recorded its key.
    const nominal = '2026-12-02T15:00:00Z';
    const dupKey = `canary@schedule/tick/s-1-${nominal}`;
    const scheduled = {
      scheduled: { scheduleId: 's-1', catchUp: 'latest' as const, lateAfterMs: 2000 },
      agent: 'canary',
      wakeKey: WAKE,
      payload: {},
      fingerprint: 'fp',
    };
    const dup: RecordedRun = {
      ...run(dupKey, input(dupKey), { terminalReason: 'duplicate', output: { takenBy: { workflowId: 'canary@schedule/tick/s-1-earlier' } } }, [], 20),
      input: scheduled,
    };
    dup.result!.eventKey = `schedule/tick/s-1/${nominal}`;
    const t = assembleTrail(recorded({ path: 'one-call', runs: [heldRun, dup] }), { maxEvents: 200 });
    const [held, completed] = t.events;
    assert.deepEqual([held!.decision, held!.tripId, held!.deliveryIds], ['held', 7, ['d1', 'd2']]);
    assert.match(held!.reason, /held by trip #7 before its first step: .*released by robin \(checked\)/);
    assert.deepEqual(
      [completed!.decision, completed!.source, completed!.type, completed!.entity, completed!.occurredAt],
      ['completed', 'schedule', 'tick', 's-1', nominal],
    );
    assert.match(completed!.reason, /completed from run canary@schedule\/tick\/s-1-earlier/);
    assert.deepEqual(t.runs[1]!.absorbed, [`schedule/tick/s-1/${nominal}`]);
    assert.deepEqual(t.notRecorded, [NOT_RECORDED.refused, NOT_RECORDED.mismatch, NOT_RECORDED.redelivered]);
  });

  test('an event skipped while a run was live is on that run; nothing in the window is not found', () => {
    const liveRun = run(RUN, batchInput(RUN, [change]), undefined, [{ kind: 'signal', at: at(8), name: 'skipped', input: { events: [report] } }]);
    const t = assembleTrail(recorded({ runs: [liveRun] }), { maxEvents: 200 });
    const skipped = t.events.find((e) => e.eventKey === report.eventKey)!;
    assert.deepEqual([skipped.decision, skipped.runKey], ['skipped', RUN]);
    assert.deepEqual(t.runs[0]!.skipped, [report.eventKey]);

    const empty = assembleTrail(recorded({ looked: ['visibility: q (0 runs)', 'coalescer x: none found'] }), { maxEvents: 200 });
    assert.equal(empty.found, false);
    assert.deepEqual(empty.looked, ['visibility: q (0 runs)', 'coalescer x: none found']);
  });
});

describe("a run's effects from its history", () => {
  const key = (name: string, _step: number) => effectKey(RUN, name, 'n0');
  const staged = [
    { effect: 'post_summary', args: { text: 'hi' } },
    { effect: 'start_export', args: { campaign: WAKE } },
  ];

  test('rejected by a person: the rejected effect is `rejected`, the reversible one before it applied', () => {
    const facts = runFacts([
      ...POLICY_READ,
      commit('11', RUN, 'post_summary', 0, 'provider_key', true, { text: 'hi' }),
      { kind: 'activity-done', scheduledId: '11', at: at(6), result: outcome(RUN, 'post_summary', 0, 'provider_key') },
      { kind: 'signal', at: at(7), name: 'reject', input: { who: 'ana', reason: 'wrong campaign', effectKey: key('start_export', 1) } },
    ]);
    const effects = effectsOf(facts, { runKey: RUN, open: false, staged });
    assert.deepEqual(
      effects.map((f) => [f.effect, f.outcome, f.approval.decision ?? null, f.approval.reason ?? null]),
      [
        ['post_summary', 'applied', null, null],
        ['start_export', 'rejected', 'rejected', 'wrong campaign'],
      ],
    );
  });

  test('waiting for approval while open, timed out once escalated, ambiguous when a reconcile cannot tell, not started after the run ended', () => {
    const facts = runFacts(POLICY_READ);
    const waiting = effectsOf(facts, {
      runKey: RUN,
      open: true,
      awaiting: { effectKey: key('start_export', 0), effect: 'start_export', args: { campaign: WAKE } },
    });
    assert.deepEqual(
      waiting.map((f) => [f.outcome, f.approval.decision]),
      [['awaiting_approval', 'waiting']],
    );
    const timedOut = effectsOf(facts, { runKey: RUN, open: false, staged: [staged[1]!], timedOut: key('start_export', 0) });
    assert.deepEqual(
      timedOut.map((f) => [f.outcome, f.approval.decision]),
      [['not_started', 'timed_out']],
    );
    const ambiguous = effectsOf(
      runFacts([
        ...POLICY_READ,
        commit('11', RUN, 'start_export', 0, 'reconcile', true, { campaign: WAKE }),
        { kind: 'activity-failed', scheduledId: '11', at: at(8), message: 'cannot tell', type: 'EffectAmbiguous' },
      ]),
      { runKey: RUN, open: false },
    );
    assert.deepEqual(
      ambiguous.map((f) => [f.outcome, f.at]),
      [['ambiguous', at(8)]],
    );
  });

  test('a commit the provider refused for good is `failed`; each outcome a trail gives is one EFFECT_OUTCOMES names', () => {
    const failed = effectsOf(
      runFacts([
        ...POLICY_READ,
        commit('11', RUN, 'start_export', 0, 'reconcile', true, { campaign: WAKE }),
        { kind: 'activity-failed', scheduledId: '11', at: at(8), message: '403 refused', type: 'ProviderRejected' },
      ]),
      { runKey: RUN, open: false },
    );
    assert.deepEqual(
      failed.map((f) => [f.outcome, f.at]),
      [['failed', at(8)]],
    );
    const landed = effectsOf(runFacts(POLICY_READ), { runKey: RUN, open: false, committed: [outcome(RUN, 'post_summary', 0, 'provider_key')] });
    for (const f of [...failed, ...landed]) assert.ok((EFFECT_OUTCOMES as readonly string[]).includes(f.outcome), f.outcome);
    assert.ok(landed.length === 1 && landed.every((f) => (LANDED_OUTCOMES as readonly string[]).includes(f.outcome)));
  });

  test('turns count answered model turns and subagents; tool calls count every call scheduled; the digest ignores key order', () => {
    const facts = runFacts([
      { kind: 'activity', id: '1', at: at(1), activityType: 'modelTurn' },
      { kind: 'activity-failed', scheduledId: '1', at: at(1), message: 'timed out' },
      { kind: 'activity', id: '2', at: at(2), activityType: 'modelTurn' },
      { kind: 'activity-done', scheduledId: '2', at: at(2) },
      { kind: 'activity', id: '3', at: at(3), activityType: 'toolCall' },
      { kind: 'activity', id: '4', at: at(3), activityType: 'toolCall' },
      { kind: 'child', at: at(3), workflowId: 'sub/a' },
      { kind: 'child-done', at: at(4), workflowId: 'sub/a', result: { spent: { turns: 1, toolCalls: 1 } } },
    ]);
    assert.deepEqual([facts.modelTurns, facts.toolCalls, facts.subagents], [2, 3, 1]);
    assert.equal(argsDigest({ a: 1, b: [1, 2] }), argsDigest({ b: [1, 2], a: 1 }));
    assert.notEqual(argsDigest({ a: 1 }), argsDigest({ a: 2 }));
  });
});

describe('reading and asking', () => {
  test("an open coalescer's answers from its history: the state it carried, then each offer with its answer, stale ones in full", () => {
    const offer = (e: AbsorbedEvent): Offer => ({ event: { ...e, payload: {}, fingerprint: 'fp', bucketStart: e.occurredAt }, offerId: 'a' });
    const carried: CoalescerState = {
      newestVersion: {},
      recent: [{ eventKey: change.eventKey, answer: taken('started') }],
      seen: [],
      lastActivityMs: 0,
      counts: { offered: 1, started: 1, coalesced: 0, skipped: 0, stale: 0, runs: 0 },
      runs: [],
      staleEvents: [],
    };
    const state = answersFromHistory(carried, [
      { kind: 'update', at: at(1), id: 'u1', name: 'offer', input: [offer(report), offer(older)] },
      { kind: 'update-done', at: at(1), id: 'u1', result: [taken('coalesced'), { decision: 'stale', coalescerId: 'c', newestVersion: 8 }] },
    ]);
    assert.deepEqual(
      state.recent.map((r) => [r.eventKey, r.answer.decision]),
      [
        [change.eventKey, 'started'],
        [report.eventKey, 'coalesced'],
        [older.eventKey, 'stale'],
      ],
    );
    assert.deepEqual(state.staleEvents, [{ ...older }]);
    assert.deepEqual(
      state.seen.map(([key, , atMs, decision]) => [key, atMs, decision]),
      [
        [report.eventKey, Date.parse(at(1)), 'coalesced'],
        [older.eventKey, Date.parse(at(1)), 'stale'],
      ],
      'each decided event gets its dedup-table entry, decided when the update was answered',
    );
    assert.equal(carried.recent.length, 1, 'the carried state is not changed');
  });

  test('the window: a duration back from now or an ISO time; a time in the future or words are refused', () => {
    const now = Date.parse('2026-12-02T12:00:00Z');
    assert.equal(windowStart('24h', now), now - 86_400_000);
    assert.equal(windowStart('30m', now), now - 1_800_000);
    assert.equal(windowStart('2026-12-01T00:00:00Z', now), Date.parse('2026-12-01T00:00:00Z'));
    assert.throws(() => windowStart('2026-12-03T00:00:00Z', now), /lies in the future/);
    assert.throws(
      () => windowStart('yesterday', now),
      (err: unknown) => err instanceof TrailRequestError && err.code === 'usage',
    );
  });

  test('an unknown agent is refused naming every known one; any wake key is one escaped visibility literal', () => {
    assert.throws(
      () => agentOf(exampleAgents, 'nobody'),
      (err: unknown) => err instanceof TrailRequestError && err.code === 'unknown_agent' && /campaign-reporter, canary, dependency-bump/.test(err.message),
    );
    assert.equal(agentOf(exampleAgents, 'canary').policy.name, 'canary');
    assert.equal(literal('k'), '"k"');
    assert.equal(literal('say "hi"'), '"say \\"hi\\""');
    // Both quote characters, a trailing backslash: still one closed literal, never a throw (the trail page's 500).
    assert.equal(literal(`it's "x"`), `"it's \\"x\\""`);
    assert.equal(literal('ends\\'), '"ends\\\\"');
    assert.equal(literal('a\\"b'), '"a\\\\\\"b"');
    assert.match(
      runsQuery('canary', 'k', Date.parse('2026-12-02T12:00:00Z')),
      /WakeKey = "k" .*StartTime >= "2026-12-02T12:00:00.000Z" OR ExecutionStatus = "Running"/,
    );
  });
});

describe('the trail shown', () => {
  const entity = '<script>alert(1)</script>';
  const markup = ev('config.changed', '2026-12-02T14:05:00Z', {
    entity,
    // The key names the entity as the gate builds it (escaped), so both the key and the event carry the markup.
    eventKey: `campaigns/config.changed/${encodeURIComponent(entity)}/2026-12-02T14:05:00Z`,
    deliveryIds: ['<img src=x onerror=alert(2)>'],
  });
  const pendingRun = `${AGENT}#${WAKE}@${markup.eventKey}`;
  const trail = assembleTrail(
    recorded({
      coalescers: [
        coalescer({
          seen: [seen(markup, 1, taken('started', pendingRun))],
          pending: {
            runKey: pendingRun,
            openedBy: markup.eventKey,
            openedAtMs: Date.parse(at(1)),
            lastAtMs: Date.parse(at(1)),
            events: [{ ...markup, payload: {}, fingerprint: 'fp', bucketStart: markup.occurredAt }],
            overflow: 0,
          },
        }),
      ],
    }),
    { maxEvents: 200 },
  );

  test('the timeline escapes every label and marks each event with its decision', () => {
    const svg = timelineSvg(trail);
    assert.ok(!svg.includes('<script>') && !svg.includes('<img'), 'no markup from the event reaches the SVG unescaped');
    assert.ok(svg.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the entity is in the tooltip, escaped');
    assert.match(svg, /<g class="event" data-event="[^"]+" data-decision="started">/);
  });

  test('the terminal table lists events with decisions and reasons, the budget each run used against its limits, what is not recorded and where it looked, with control characters masked', () => {
    const text = trailTable({ ...trail, wakeKey: 'c1\u001b[2J' });
    assert.match(text, /c1\?\[2J · coalescing/);
    assert.match(text, /EVENTS 1\n +arrived +occurred +source +type +version +deliveries +decision +why\n.*config\.changed.*started +opened the batch of run/);
    assert.match(text, /NOT RECORDED[^\n]*\n {2}- `refused`/);
    assert.match(text, /LOOKED AT\n {2}- visibility: …/);
    const seed = assembleTrail(
      recorded({
        runs: [
          run(
            RUN,
            batchInput(RUN, [change]),
            {
              terminalReason: 'success',
              absorbed: [change],
              skipped: [],
              usage: { turns: 2, tokens: 600, toolCalls: 3, costUsd: 0.002, wallClockMs: 900 },
            },
            POLICY_READ,
          ),
        ],
      }),
      { maxEvents: 200 },
    );
    assert.match(trailTable(seed), /budget used: turns 2\/6, tool calls and effects 3\/12, tokens 600\/40000, cost \$0\.002\/\$0\.5, wall clock 900\/1000 ms/);
    assert.ok(!text.includes('\u001b'), 'no escape sequence reaches the terminal');
  });
});

describe('the decision trail of overlap steer', () => {
  const steered = (runKey = RUN): OfferAnswer => ({ decision: 'steered', coalescerId: `${AGENT}#${WAKE}`, runKey, runState: 'running' });
  const late = ev('report.due', '2026-12-02T14:09:00Z', { deliveryIds: ['queue:campaigns:2-0'] });
  const FOLLOW_UP = `${AGENT}#${WAKE}@${late.eventKey}`;

  test('steered into a live run: named from the run’s answered steer updates while it has no result', () => {
    const history: RecordedEvent[] = [
      { kind: 'update', at: at(8), id: `steer:${report.eventKey}`, name: 'steer', input: { events: [report] } },
      { kind: 'update-done', at: at(8), id: `steer:${report.eventKey}`, result: { accepted: [report.eventKey], refused: [] } },
    ];
    const liveRun = run(RUN, batchInput(RUN, [change]), undefined, history);
    const t = assembleTrail(recorded({ runs: [liveRun], coalescers: [coalescer({ seen: [seen(change, 1, taken('started')), seen(report, 7, steered())] })] }), {
      maxEvents: 200,
    });
    const e = t.events.find((x) => x.eventKey === report.eventKey)!;
    assert.deepEqual([e.decision, e.runKey, e.finalRunKey], ['steered', RUN, undefined]);
    assert.match(e.reason, /^steered into live run .*\(overlap steer\): its model was given the event before its next turn$/);
    assert.deepEqual(t.runs[0]!.steered, [report.eventKey]);
    assert.match(trailTable(t), /took 1 event\(s\) \(1 steered in while live\)/);
  });

  test('refused by a committing run: the follow-up run that took it, or waiting for one', () => {
    const refusing = run(RUN, batchInput(RUN, [change]), { terminalReason: 'success', absorbed: [change] });
    const coalescers = [coalescer({ seen: [seen(change, 1, taken('started')), seen(late, 7, steered())] })];
    const followUp = run(FOLLOW_UP, batchInput(FOLLOW_UP, [late]), undefined, [], 9);
    const took = assembleTrail(recorded({ runs: [refusing, followUp], coalescers }), { maxEvents: 200 }).events.find((x) => x.eventKey === late.eventKey)!;
    assert.deepEqual([took.decision, took.runKey, took.finalRunKey], ['steered', RUN, FOLLOW_UP]);
    assert.match(took.reason, /refused it; follow-up run .* took it$/);
    const waiting = assembleTrail(recorded({ runs: [refusing], coalescers }), { maxEvents: 200 }).events.find((x) => x.eventKey === late.eventKey)!;
    assert.deepEqual([waiting.decision, waiting.finalRunKey], ['steered', undefined]);
    assert.match(waiting.reason, /refused it; waiting for its follow-up run$/);
  });
});
