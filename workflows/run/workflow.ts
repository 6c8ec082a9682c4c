import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  makeContinueAsNewFunc,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { FailureType } from '../../core/failures';
import { approveSignal, deliverySignal, killUpdate, rejectSignal, runEndedSignal, skippedSignal, statusQuery, supersedeSignal } from '../../core/messages';
import {
  MAX_DELIVERY_IDS_INDEXED,
  WakeAbsorbedEventKeys,
  WakeKey,
  WakeAgent,
  WakeAttempts,
  WakeCostUsd,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeEntity,
  WakeEventKey,
  WakeEventType,
  WakeOccurredAt,
  WakeSource,
  WakeTerminalReason,
  WakeTokens,
} from '../../core/search-attributes';
import type { AbsorbedEvent, ApprovalDecision, BudgetUsage, KillRequest, ScheduledRunInput, TerminalReason, WakeInput, WakeResult } from '../../core/types';
import { prepareRun } from './proxies';
import { runAgentLoop } from './agent-loop';
import { newPool } from '../../core/budget';
import { newRunState, type RunOutcome } from '../../core/run-state';
import { CONTINUE_AS_NEW, haltVerdict, holdIfSupervised, NOT_YET_WORKING } from './hold';
import type { HoldRecord } from '../../core/supervisor-types';
import { isScheduledRun, openWindow, scheduledWakeInput, settleReport, takenOutcome } from './window';

/** Workflow time (replayed from history, so deterministic); the wall-clock budget is measured in it. */
// eslint-disable-next-line no-restricted-syntax
const workflowNow = (): number => Date.now();

/** Events listed on a run's result and status (the rest are counted). */
const MAX_SKIPPED_LISTED = 1000;

/**
 * One run of one agent. On the one-call path it is the run for one logical event (workflow ID
 * `agent@eventKey`), so Temporal keeps at most one open run per (agent, event) and the gate answers
 * duplicates from it; a coalesced run (`agent#wakeKey@eventKey`) is started by its coalescer with
 * every event it absorbed, records them, and tells the coalescer when it ends.
 *
 * Records every delivery id it sees, runs the agent named in the input (its steps, and for an agent
 * with a model the bounded agent loop under its budget), and ends with a terminal reason, recorded as search
 * attribute WakeTerminalReason and in the result, beside WakeAttempts, WakeTokens and WakeCostUsd.
 * Update `kill` stops it before its next step (in-flight activities are cancelled); `approve` /
 * `reject` decide an irreversible effect. A cancelled or killed run ends `cancelled` and completes,
 * so a later redelivery is answered with that stored outcome rather than started again. A defect
 * fails the workflow (recorded `failed`), which lets a redelivery run it again.
 *
 * A schedule's window for an agent on the one-call path is started by its Temporal Schedule itself,
 * with the Schedule's fixed input (ScheduledRunInput): the run takes its window from Temporal and,
 * before its first step, applies the catch-up policy and answers a window that already ran
 * (run/window.ts).
 */
export async function wakeWorkflow(arg: WakeInput | ScheduledRunInput): Promise<WakeResult> {
  const input = isScheduledRun(arg) ? scheduledWakeInput(arg) : arg;
  const resumed = input.resumedHold;
  const deliveryIds: string[] = resumed ? [...resumed.deliveryIds] : input.deliveryId ? [input.deliveryId] : [];
  const absorbed: AbsorbedEvent[] = resumed?.absorbed
    ? resumed.absorbed.map((e) => ({ ...e, deliveryIds: [...e.deliveryIds] }))
    : (input.absorbed ?? []).map(({ payload: _payload, ...e }) => ({ ...e, deliveryIds: [...e.deliveryIds] }));
  const skipped: AbsorbedEvent[] = resumed ? [...resumed.skipped] : [];
  let skippedOverflow = resumed?.skippedOverflow ?? 0;
  let supersededBy: string | undefined;
  let deliveryCount = resumed?.deliveryCount ?? 1;
  let indexDirty = false;
  let killedBy: KillRequest | undefined;
  let haltedBeforeWork: KillRequest | undefined;
  const held: { record?: HoldRecord; heldAtMs?: number; waitMs?: number } = {};
  let done = false;
  const state = newRunState(workflowInfo().runStartTime.getTime());
  const runScope = new CancellationScope();

  const usage = (): BudgetUsage | undefined =>
    state.pool && { ...state.pool.spent, costUsd: Math.round(state.pool.spent.costUsd * 1e6) / 1e6, wallClockMs: workflowNow() - state.startedAtMs };

  const seen = new Set(deliveryIds);
  setHandler(deliverySignal, (notice) => {
    const mine = notice.eventKey ? absorbed.find((e) => e.eventKey === notice.eventKey) : undefined;
    if (mine) for (const id of notice.deliveryIds) if (!mine.deliveryIds.includes(id)) mine.deliveryIds.push(id);
    for (const id of notice.deliveryIds) {
      deliveryCount += 1;
      if (!seen.has(id)) {
        seen.add(id);
        deliveryIds.push(id);
      }
    }
    indexDirty = true;
  });
  setHandler(skippedSignal, ({ events }) => {
    for (const e of events) {
      if (skipped.length < MAX_SKIPPED_LISTED) skipped.push(e);
      else skippedOverflow += 1;
    }
  });
  setHandler(supersedeSignal, ({ by }) => {
    supersededBy = by;
  });
  setHandler(statusQuery, () => ({
    runKey: input.runKey,
    eventKey: input.eventKey,
    agent: input.agent,
    wakeKey: input.wakeKey,
    absorbed,
    skipped,
    phase: state.phase,
    deliveryIds,
    deliveryCount,
    usage: usage(),
    awaitingApproval: state.approval.pending,
    ...(held.record ? { held: held.record } : {}),
  }));
  setHandler(
    killUpdate,
    (req) => {
      if (req.halt && NOT_YET_WORKING.has(state.phase)) {
        haltedBeforeWork = req;
        return { accepted: true, phase: state.phase, held: true };
      }
      killedBy = req;
      runScope.cancel();
      return { accepted: true, phase: state.phase };
    },
    {
      validator: (req) => {
        if (done) throw new Error('the run has already finished');
        if (!req?.who || !req?.reason) throw new Error('kill needs who and reason');
      },
    },
  );
  // The first decision wins; one for another effect key than the waiting one is ignored. It may
  // arrive before the wait begins (same workflow task): the commit stage keeps it.
  const decide = (approved: boolean) => (d: ApprovalDecision) => {
    if (done || state.approval.decision || !d?.who) return;
    const pending = state.approval.pending;
    if (pending && d.effectKey && d.effectKey !== pending.effectKey) return;
    state.approval.decision = { approved, who: d.who, reason: d.reason };
  };
  setHandler(approveSignal, decide(true));
  setHandler(rejectSignal, decide(false));

  // The gate's start carries no search attributes (each one makes the start write heavier); the run
  // indexes itself here, in its first workflow task, as soon as a worker picks it up.
  upsertSearchAttributes([
    { key: WakeEventKey, value: input.eventKey },
    { key: WakeSource, value: input.source },
    { key: WakeEntity, value: input.entity },
    { key: WakeEventType, value: input.type },
    { key: WakeAgent, value: input.agent },
    { key: WakeKey, value: input.wakeKey },
    { key: WakeOccurredAt, value: new Date(input.occurredAt) },
    ...(absorbed.length ? [{ key: WakeAbsorbedEventKeys, value: absorbed.slice(0, MAX_DELIVERY_IDS_INDEXED).map((e) => e.eventKey) }] : []),
    { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
    { key: WakeDeliveryCount, value: deliveryCount },
  ]);

  // A burst of duplicate deliveries arrives as many signals in one activation; index them once.
  // Non-cancellable: a cancelled run still records the deliveries that reach it.
  void CancellationScope.nonCancellable(async () => {
    for (;;) {
      await condition(() => indexDirty);
      indexDirty = false;
      upsertSearchAttributes([
        { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
        { key: WakeDeliveryCount, value: deliveryCount },
      ]);
    }
  });

  const record = (terminalReason: TerminalReason) => {
    const u = usage();
    upsertSearchAttributes([
      { key: WakeTerminalReason, value: terminalReason },
      { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
      { key: WakeDeliveryCount, value: deliveryCount },
      { key: WakeAttempts, value: state.maxAttempt },
      ...(u ? [{ key: WakeTokens, value: u.tokens }, { key: WakeCostUsd, value: u.costUsd }] : []),
    ]);
    log.info('wake finished', {
      runKey: input.runKey,
      eventKey: input.eventKey,
      agent: input.agent,
      wakeKey: input.wakeKey,
      terminalReason,
      deliveryIds,
      deliveryCount,
      absorbed: absorbed.length + (input.absorbedOverflow ?? 0),
      skipped: skipped.length + skippedOverflow,
      attempts: state.maxAttempt,
      usage: u,
    });
    return u;
  };
  /**
   * A coalesced run tells its coalescer it has ended, so the next batch may start. Awaited before the
   * run closes: Temporal drops a signal whose sender has closed by the time it is delivered. A
   * coalescer that is gone has nothing left to start, so a failure to deliver is ignored.
   */
  const tellCoalescer = async (terminalReason: TerminalReason) => {
    if (!input.coalescerId) return;
    await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(input.coalescerId!).signal(runEndedSignal, { runKey: input.runKey, terminalReason })).catch(
      () => undefined,
    );
  };
  const finish = (o: RunOutcome): WakeResult => {
    done = true;
    state.phase = 'done';
    const u = record(o.reason);
    return {
      runKey: input.runKey,
      eventKey: input.eventKey,
      agent: input.agent,
      wakeKey: input.wakeKey,
      terminalReason: o.reason,
      summary: o.summary,
      deliveryIds,
      deliveryCount,
      output: o.output,
      attempts: state.maxAttempt,
      ...(u ? { usage: u } : {}),
      ...(killedBy ? { killedBy } : {}),
      ...(input.absorbed ? { absorbed, ...(input.absorbedOverflow ? { absorbedOverflow: input.absorbedOverflow } : {}) } : {}),
      ...(input.coalescerId ? { skipped, ...(skippedOverflow ? { skippedOverflow } : {}) } : {}),
      ...(supersededBy ? { supersededBy } : {}),
      ...(held.record ? { held: held.record } : {}),
    };
  };

  let reported: Promise<void> | undefined;
  try {
    const outcome = await runScope.run(async (): Promise<RunOutcome> => {
      state.phase = 'loading';
      const window = input.scheduled && !resumed ? await openWindow({ ...input, scheduled: input.scheduled }, workflowNow()) : undefined;
      reported = window?.reported;
      if (window?.outcome) return window.outcome;
      // The agent's policy and the payload it works on (merged by the agent from every absorbed event), through history.
      const { policy, payload, verdict, taken } = await prepareRun({
        agent: input.agent,
        payloads: input.absorbed?.map((e) => e.payload ?? {}) ?? [input.payload],
        ...(resumed ? { withoutVerdict: true } : {}),
        ...(window?.check ? { window: window.check } : {}),
      });
      if (taken) return takenOutcome({ ...input, scheduled: input.scheduled! }, taken);
      // The supervisor's word before any token is spent: a held run waits here until it is let go.
      // A halt that reached the run before its work holds it, whatever an older read of the supervisor said.
      const first = verdict && haltedBeforeWork ? haltVerdict(haltedBeforeWork, verdict) : verdict;
      const heldOutcome = await holdIfSupervised(input.agent, first, state, held, resumed, () => supersededBy === undefined);
      if (heldOutcome === CONTINUE_AS_NEW) {
        const record = { ...held.record!, continuedAsNew: (held.record!.continuedAsNew ?? 0) + 1 };
        await condition(allHandlersFinished);
        await settleReport(reported);
        // Its memo (the fingerprint the gate compares) and search attributes (WakeHeld, the keys) go with it.
        const info = workflowInfo();
        return makeContinueAsNewFunc<typeof wakeWorkflow>({ memo: info.memo, typedSearchAttributes: info.typedSearchAttributes })({
          ...input,
          resumedHold: { record, heldAtMs: held.heldAtMs!, waitMs: held.waitMs!, deliveryIds, deliveryCount, skipped, skippedOverflow, ...(input.absorbed ? { absorbed } : {}) },
        });
      }
      if (heldOutcome) return heldOutcome; // discarded
      state.pool = newPool(policy.budget);
      return runAgentLoop({ ...input, payload }, policy, state, state.pool, workflowNow());
    });
    const result = finish(outcome);
    await tellCoalescer(result.terminalReason);
    await settleReport(reported);
    return result;
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err; // a held run going on in its next run (see holdIfSupervised)
    // Cancelled, the run waits for its step in flight to stop; a step whose worker is gone ends in a
    // timeout instead of a cancellation, and that too is the cancellation's doing.
    if (isCancellation(err) || runScope.consideredCancelled) {
      return CancellationScope.nonCancellable(async () => {
        const result = finish({
          reason: 'cancelled',
          summary: killedBy
            ? `killed by ${killedBy.who}: ${killedBy.reason}`
            : supersededBy
              ? `cancelled by its coalescer: ${supersededBy} restarts on the newest state with this run's events`
              : 'the run was cancelled before it finished',
          output: { phase: state.phase, committed: state.effects },
        });
        await tellCoalescer('cancelled');
        await settleReport(reported);
        return result;
      });
    }
    done = true;
    record('failed');
    await tellCoalescer('failed');
    await settleReport(reported);
    if (err instanceof ApplicationFailure) throw err;
    // Name the root cause (an activity's own failure, not "Activity task failed") and keep the chain.
    let root = err as Error;
    while (root.cause instanceof Error) root = root.cause;
    throw ApplicationFailure.create({ message: `run failed: ${root.message}`, type: FailureType.RunFailed, nonRetryable: true, cause: err as Error });
  }
}
