import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  setHandler,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { Batch, CoalescerInput, CoalescerState, Offer, OfferAnswer, RunEnded } from '../core/coalesce-types';
import { batchRunId, coalescerId as coalescerIdOf } from '../core/ids';
import { coalescerQuery, deliverySignal, offerUpdate, runEndedSignal, skippedSignal, supersedeSignal } from '../core/messages';
import type { AbsorbedEvent, TerminalReason, WakeInput, WakeResult } from '../core/types';
import type { wakeWorkflow } from './run/workflow';

/** Answers kept for retried offers that cross a continue-as-new. */
const RECENT_ANSWERS = 1000;
const RECENT_RUNS = 10;
const STALE_KEPT = 20;

/** Workflow time (the activation's, replayed from history): debounce and idle timing are measured in it. */
// eslint-disable-next-line no-restricted-syntax
const now = (): number => Date.now();

const record = (e: Offer['event']): AbsorbedEvent => {
  const { payload: _p, fingerprint: _f, bucketStart: _b, ...rest } = e;
  return rest;
};

/** When a pending batch may start: a quiet `debouncePeriodMs` after its last event, at the latest `maxWaitMs` after its first. */
const dueAt = (b: Batch, p: CoalescerInput['policy']) => Math.min(b.lastAtMs + p.debouncePeriodMs, b.openedAtMs + p.maxWaitMs);

/**
 * The coalescer of one (agent, wake key): an entity workflow (ID `agent#wakeKey`) that turns every
 * wake about one thing, from every trigger, into as few runs as the agent's policy allows. Events
 * reach it from their admission records by update-with-start (`offer`, batched per worker process),
 * each answered with its decision; the coalescer itself never deduplicates events (their admission
 * records do), except that it repeats its answer to a retried offer.
 *
 * - Debounce: a burst becomes one pending batch that starts as a run once no event came for the
 *   debounce period, and at the latest `maxWait` after the batch opened.
 * - While a run is live: `skip` records the event on that run; `buffer_one` gathers one follow-up
 *   batch; `cancel` cancels the live run and restarts on the newest state with its events too.
 * - Out of order: an event whose version is older than the newest seen from its source is `stale`.
 * - Runs are child workflows (ID `agent#wakeKey@<opening event key>`), abandoned on close so the
 *   coalescer can continue-as-new under them; a run tells its coalescer when it ends.
 * - Bounded history: continues as new when Temporal suggests it (history size, or 90% of the
 *   per-run update limit); closes after `idleCloseMs` with no event and no run.
 */
export async function coalescerWorkflow(input: CoalescerInput): Promise<CoalescerState> {
  const { agent, wakeKey, policy } = input;
  const selfId = coalescerIdOf(agent, wakeKey);
  const state: CoalescerState = input.state ?? {
    newestVersion: {},
    recent: [],
    lastActivityMs: now(),
    counts: { offered: 0, started: 0, coalesced: 0, skipped: 0, stale: 0, runs: 0 },
    runs: [],
    staleEvents: [],
  };
  let dirty = false;
  let toRecordSkipped: AbsorbedEvent[] = [];
  let toSupersede: { runKey: string; by: string } | undefined;

  let offering: Offer | undefined;
  const remember = (eventKey: string, answer: OfferAnswer): OfferAnswer => {
    state.recent.push({ eventKey, ...(offering?.admissionRunId ? { admissionRunId: offering.admissionRunId } : {}), answer });
    if (state.recent.length > RECENT_ANSWERS) state.recent.splice(0, state.recent.length - RECENT_ANSWERS);
    return answer;
  };

  const addTo = (batch: Batch, e: Offer['event']) => {
    batch.lastAtMs = now();
    if (batch.events.length < policy.maxEventsPerRun) batch.events.push(e);
    else {
      // Full: count it, and keep the newest event in the last slot (the run works on the newest state).
      batch.overflow += 1;
      batch.events[batch.events.length - 1] = e;
    }
  };

  const open = (e: Offer['event'], carried?: { runKey: string; events: Offer['event'][]; overflow: number }): Batch => ({
    runKey: batchRunId(agent, wakeKey, e.eventKey),
    openedBy: e.eventKey,
    openedAtMs: now(),
    lastAtMs: now(),
    events: [...(carried?.events ?? []), e].slice(-policy.maxEventsPerRun),
    overflow: (carried?.overflow ?? 0) + Math.max(0, (carried?.events.length ?? 0) + 1 - policy.maxEventsPerRun),
    ...(carried ? { supersedes: carried.runKey } : {}),
  });

  const pendingAnswer = (b: Batch, decision: 'started' | 'coalesced'): OfferAnswer => ({
    decision,
    coalescerId: selfId,
    runKey: b.runKey,
    runState: 'pending',
    startsInMs: state.running ? 0 : Math.max(0, dueAt(b, policy) - now()),
  });

  /** The decision for one offered event: synchronous, so each offer sees the state the previous one left. */
  const decide = (offer: Offer): OfferAnswer => {
    const { event: e } = offer;
    offering = offer;
    const seen = state.recent.find((r) => r.eventKey === e.eventKey && r.admissionRunId === offer.admissionRunId);
    if (seen) return seen.answer;
    // Past the recent answers, an event still in the pending batch or the live run is never taken twice.
    for (const [batch, runState] of [[state.pending, 'pending'], [state.running, 'running']] as const) {
      if (batch?.events.some((x) => x.eventKey === e.eventKey)) {
        const opened = 'openedBy' in batch ? batch.openedBy === e.eventKey : batch.events[0]?.eventKey === e.eventKey;
        return remember(e.eventKey, { decision: opened ? 'started' : 'coalesced', coalescerId: selfId, runKey: batch.runKey, runState });
      }
    }
    state.counts.offered += 1;
    state.lastActivityMs = now();
    if (e.version !== undefined) {
      const newest = state.newestVersion[e.source];
      if (newest !== undefined && e.version < newest) {
        state.counts.stale += 1;
        state.staleEvents.push(record(e));
        if (state.staleEvents.length > STALE_KEPT) state.staleEvents.shift();
        return remember(e.eventKey, { decision: 'stale', coalescerId: selfId, newestVersion: newest });
      }
      state.newestVersion[e.source] = e.version;
    }
    const running = state.running;
    if (running && policy.whileRunning === 'skip') {
      state.counts.skipped += 1;
      toRecordSkipped.push(record(e));
      return remember(e.eventKey, { decision: 'skipped', coalescerId: selfId, runKey: running.runKey, runState: 'running' });
    }
    if (state.pending) {
      addTo(state.pending, e);
      state.counts.coalesced += 1;
      return remember(e.eventKey, pendingAnswer(state.pending, 'coalesced'));
    }
    if (running && policy.whileRunning === 'cancel' && !running.cancelRequested) {
      // Restart on the newest state: the new batch takes the live run's events too, and the live run
      // learns who supersedes it before its cancellation arrives (signals and cancel are delivered in order).
      running.cancelRequested = true;
      state.pending = open(e, running);
      toSupersede = { runKey: running.runKey, by: state.pending.runKey };
    } else {
      state.pending = open(e);
    }
    state.counts.started += 1;
    return remember(e.eventKey, pendingAnswer(state.pending, 'started'));
  };

  const ended = ({ runKey, terminalReason }: RunEnded) => {
    // The newest with this key: a re-armed event's batch reuses the ID of the run that was deleted.
    const summary = [...state.runs].reverse().find((r) => r.runKey === runKey);
    if (summary && !summary.endedAt) {
      summary.endedAt = new Date(now()).toISOString();
      summary.terminalReason = terminalReason;
    }
    if (state.running?.runKey !== runKey) return;
    state.running = undefined;
    state.lastActivityMs = now();
    dirty = true;
  };

  setHandler(
    offerUpdate,
    (offers) => {
      const answers = offers.map(decide);
      dirty = true;
      return answers;
    },
    {
      validator: (offers) => {
        if (!Array.isArray(offers) || offers.some((o) => !o?.event?.eventKey || !o.event.source)) throw new Error('each offer needs event.eventKey and event.source');
      },
    },
  );
  setHandler(runEndedSignal, ended);
  // A redelivery of an event still waiting in the pending batch: keep its delivery id with the event.
  setHandler(deliverySignal, ({ eventKey, deliveryIds }) => {
    const e = state.pending?.events.find((x) => x.eventKey === eventKey);
    if (e) e.deliveryIds.push(...deliveryIds.filter((d) => !e.deliveryIds.includes(d)));
  });
  setHandler(coalescerQuery, () => ({ agent, wakeKey, policy, state, coalescerId: selfId, historyLength: workflowInfo().historyLength }));

  const startRun = async (b: Batch) => {
    state.pending = undefined;
    state.running = { runKey: b.runKey, startedAtMs: now(), events: b.events, overflow: b.overflow };
    state.counts.runs += 1;
    state.runs.push({ runKey: b.runKey, events: b.events.length + b.overflow, startedAt: new Date(now()).toISOString() });
    if (state.runs.length > RECENT_RUNS) state.runs.shift();
    const opener = b.events.find((e) => e.eventKey === b.openedBy) ?? b.events[b.events.length - 1]!;
    const run: WakeInput = {
      runKey: b.runKey,
      agent,
      wakeKey,
      eventKey: opener.eventKey,
      source: opener.source,
      entity: opener.entity,
      type: opener.type,
      occurredAt: opener.occurredAt,
      bucketStart: opener.bucketStart,
      payload: opener.payload,
      fingerprint: opener.fingerprint,
      ...(opener.deliveryIds[0] ? { deliveryId: opener.deliveryIds[0] } : {}),
      origin: { kind: 'batch', coalescerId: selfId, absorbed: b.events, ...(b.overflow ? { absorbedOverflow: b.overflow } : {}), ...(b.supersedes ? { supersedes: b.supersedes } : {}) },
    };
    try {
      const child = await startChild<typeof wakeWorkflow>('wakeWorkflow', {
        workflowId: b.runKey,
        args: [run],
        // The run outlives a continue-as-new (or a close) of its coalescer; it reports its end by signal.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
      // Also watch it directly while this coalescer run lives: a run terminated by hand sends no signal.
      void child.result().then(
        (r: WakeResult) => ended({ runKey: b.runKey, terminalReason: r.terminalReason }),
        () => ended({ runKey: b.runKey, terminalReason: 'failed' as TerminalReason }),
      );
    } catch (err) {
      // Its ID is taken only if this very batch was started before (the IDs are unique per opening
      // event): it runs, and it will report. Anything else is a defect for the workflow task to retry.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };

  // Signals to runs are awaited in the loop, never sent from a handler: Temporal drops a signal whose
  // sender has closed (continued as new) by the time it is delivered.
  for (;;) {
    if (toSupersede) {
      const { runKey, by } = toSupersede;
      toSupersede = undefined;
      const live = getExternalWorkflowHandle(runKey);
      // The live run learns who supersedes it before its cancellation arrives (delivered in order).
      await live
        .signal(supersedeSignal, { by })
        .then(() => live.cancel())
        .catch(() => undefined); // the run already ended: its runEnded signal is on the way
    }
    if (toRecordSkipped.length && state.running) {
      const events = toRecordSkipped;
      toRecordSkipped = [];
      // One signal per pass carries every skip since the last: a storm costs a few history events, not one each.
      await getExternalWorkflowHandle(state.running.runKey)
        .signal(skippedSignal, { events })
        .catch(() => undefined);
      continue;
    }
    toRecordSkipped = []; // with no live run left to record them on, the skips stay counted and answered
    if (state.pending && !state.running && now() >= dueAt(state.pending, policy)) {
      await startRun(state.pending);
      continue;
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof coalescerWorkflow>({ agent, wakeKey, policy, state });
    }
    const idle = !state.pending && !state.running;
    if (idle && now() - state.lastActivityMs >= policy.idleCloseMs) {
      await condition(allHandlersFinished);
      if (!state.pending && !state.running) return state;
      continue;
    }
    const wakeAt = state.pending && !state.running ? dueAt(state.pending, policy) : idle ? state.lastActivityMs + policy.idleCloseMs : undefined;
    dirty = false;
    if (wakeAt === undefined) await condition(() => dirty);
    else await condition(() => dirty, Math.max(1, wakeAt - now()));
  }
}
