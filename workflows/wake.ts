import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { approveSignal, deliverySignal, killUpdate, rejectSignal, statusQuery } from './messages';
import {
  MAX_DELIVERY_IDS_INDEXED,
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
} from './search-attributes';
import type { ApprovalDecision, BudgetUsage, KillRequest, TerminalReason, WakeInput, WakeResult } from './types';
import { runCanary } from './agents/canary';
import { loadAgentPolicy } from './run/activities';
import { runAgentLoop } from './run/agent-loop';
import { newPool, tighter } from './run/budget';
import { newRunState, type RunOutcome } from './run/state';

/** Workflow time (replayed from history, so deterministic); the wall-clock budget is measured in it. */
// eslint-disable-next-line no-restricted-syntax
const workflowNow = (): number => Date.now();

/**
 * One wake: the run for one logical event. Its workflow ID is the event key, so Temporal keeps at
 * most one open run per key and the gate answers duplicates from it.
 *
 * Records every delivery id it sees, runs the agent named in the input (the canary, or a bounded
 * agent loop under the agent's budget), and ends with a terminal reason, recorded as search
 * attribute WakeTerminalReason and in the result, beside WakeAttempts, WakeTokens and WakeCostUsd.
 * Update `kill` stops it before its next step (in-flight activities are cancelled); `approve` /
 * `reject` decide an irreversible effect. A cancelled or killed run ends `cancelled` and completes,
 * so a later redelivery is answered with that stored outcome rather than started again. A defect
 * fails the workflow (recorded `failed`), which lets a redelivery run it again.
 */
export async function wakeWorkflow(input: WakeInput): Promise<WakeResult> {
  const deliveryIds: string[] = input.deliveryId ? [input.deliveryId] : [];
  let deliveryCount = 1;
  let indexDirty = false;
  let killedBy: KillRequest | undefined;
  let done = false;
  const state = newRunState(workflowInfo().runStartTime.getTime());
  const runScope = new CancellationScope();

  const usage = (): BudgetUsage | undefined =>
    state.pool && { ...state.pool.spent, costUsd: Math.round(state.pool.spent.costUsd * 1e6) / 1e6, wallClockMs: workflowNow() - state.startedAtMs };

  const seen = new Set(deliveryIds);
  setHandler(deliverySignal, (notice) => {
    for (const id of notice.deliveryIds) {
      deliveryCount += 1;
      if (!seen.has(id)) {
        seen.add(id);
        deliveryIds.push(id);
      }
    }
    indexDirty = true;
  });
  setHandler(statusQuery, () => ({
    eventKey: input.eventKey,
    agent: input.agent,
    phase: state.phase,
    deliveryIds,
    deliveryCount,
    usage: usage(),
    awaitingApproval: state.approval.pending,
  }));
  setHandler(
    killUpdate,
    (req) => {
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
    { key: WakeOccurredAt, value: new Date(input.occurredAt) },
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
    log.info('wake finished', { eventKey: input.eventKey, agent: input.agent, terminalReason, deliveryIds, deliveryCount, attempts: state.maxAttempt, usage: u });
    return u;
  };
  const finish = (o: RunOutcome): WakeResult => {
    done = true;
    state.phase = 'done';
    const u = record(o.reason);
    return {
      eventKey: input.eventKey,
      agent: input.agent,
      terminalReason: o.reason,
      summary: o.summary,
      deliveryIds,
      deliveryCount,
      output: o.output,
      attempts: state.maxAttempt,
      ...(u ? { usage: u } : {}),
      ...(killedBy ? { killedBy } : {}),
    };
  };

  try {
    const outcome = await runScope.run(async (): Promise<RunOutcome> => {
      if (input.agent === 'canary') {
        const output = await runCanary(input, (p) => (state.phase = p));
        return { reason: 'success', summary: `canary recorded ${input.eventKey}${output.heldMs ? ` and held ${output.heldMs} ms` : ''}`, output };
      }
      state.phase = 'loading';
      const policy = await loadAgentPolicy(input.agent);
      state.pool = newPool(tighter(policy.budget, input.budget));
      return runAgentLoop(input, policy, state, state.pool, workflowNow());
    });
    return finish(outcome);
  } catch (err) {
    if (isCancellation(err)) {
      return CancellationScope.nonCancellable(async () =>
        finish({
          reason: 'cancelled',
          summary: killedBy ? `killed by ${killedBy.who}: ${killedBy.reason}` : 'the run was cancelled before it finished',
          output: { phase: state.phase, committed: state.effects },
        }),
      );
    }
    done = true;
    record('failed');
    if (err instanceof ApplicationFailure) throw err;
    // Name the root cause (an activity's own failure, not "Activity task failed") and keep the chain.
    let root = err as Error;
    while (root.cause instanceof Error) root = root.cause;
    throw ApplicationFailure.create({ message: `run failed: ${root.message}`, type: 'RunFailed', nonRetryable: true, cause: err as Error });
  }
}
