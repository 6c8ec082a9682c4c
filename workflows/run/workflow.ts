import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  makeContinueAsNewFunc,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { FailureType } from '../../src/core/failures';
import type { ScheduledRunInput, RunInput, RunResult } from '../../src/core/run-types';
import { prepareRun } from './proxies';
import { runAgentLoop } from './agent-loop';
import { newPool } from '../../src/core/budget';
import { newRunState, type RunOutcome } from '../../src/core/run-state';
import { CONTINUE_AS_NEW, haltVerdict, holdIfSupervised } from './hold';
import { RunRecord } from './record';
import { listen } from './record-messages';
import { shadowNotLetRun, startLiveShadow } from './shadow';
import { workflowNow } from '../shared/clock';
import { isScheduledRun, openWindow, windowRunInput, settleReport, takenOutcome, type LedgerReport } from '../schedule/window-run';

/**
 * One run of one agent. On the one-call path it is the run for one logical event (workflow ID
 * `agent@eventKey`), so Temporal keeps at most one open run per (agent, event) and the gate answers
 * duplicates from it; a coalesced run (`agent#wakeKey@eventKey`) is started by its coalescer with
 * every event it absorbed, records them, and ends with a result that tells its coalescer all it needs
 * (the coalescer follows it as a child); it signals its end only when asked (`reportEnd`), or failed.
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
 * with the Schedule's fixed input (ScheduledRunInput, origin `window`): the run takes its window from Temporal and,
 * before its first step, applies the catch-up policy and answers a window that already ran
 * (schedule/window-run.ts).
 */
export async function runWorkflow(arg: RunInput | ScheduledRunInput): Promise<RunResult> {
  const input = isScheduledRun(arg) ? windowRunInput(arg) : arg;
  const resumed = input.resumedHold;
  const { origin } = input;
  const state = newRunState(workflowInfo().runStartTime.getTime());
  const runRecord = new RunRecord(input, state);
  const runScope = new CancellationScope();
  listen(runRecord, runScope);
  runRecord.index();

  let reported: LedgerReport | undefined;
  /** The agent's live-shadow sample, from its policy (src/core/shadow.ts). */
  let shadowSample: number | undefined;
  /** The run's work, in its cancellable scope: the window's checks, the supervisor's word, the agent loop. */
  const work = async (): Promise<RunOutcome> => {
    state.phase = 'loading';
    const window = origin.kind === 'window' && !resumed ? await openWindow(input, origin.window, workflowNow()) : undefined;
    reported = window?.report;
    if (window?.outcome) return window.outcome;
    // The agent's policy and the payload it works on (merged by the agent from every absorbed event), through history.
    const info = workflowInfo();
    const isReset = Boolean(info.originalExecutionRunId) && info.runId !== info.originalExecutionRunId;
    const { policy, payload, verdict, taken, resetSlots, slotsReadFor } = await prepareRun({
      agent: input.agent,
      wakeKey: input.wakeKey,
      ...(input.agentVersion ? { agentVersion: input.agentVersion } : {}),
      payloads: payloadsOf(input),
      // A `wakegate shadow` session's run takes no permit; a live shadow takes one from the shadow caps (src/core/caps.ts).
      ...(resumed || (origin.kind === 'shadow' && !origin.live) ? { withoutVerdict: true } : {}),
      ...(window?.check ? { window: window.check } : {}),
      // Reset from the Web UI or the CLI: its effects take the keys every other execution gave them.
      ...(isReset ? { afterReset: { ...(input.replay ? { carried: input.replay.effects } : {}) } } : {}),
    });
    runRecord.agentVersion = policy.version;
    void reported?.send();
    shadowSample = policy.shadow?.sample;
    if (taken && origin.kind === 'window') return takenOutcome(input, origin.window, taken);
    // The supervisor's word before any token is spent: a held run waits here until it is let go.
    // A halt that reached the run before its work holds it, whatever an older read of the supervisor said.
    const first = verdict && runRecord.haltedBeforeWork ? haltVerdict(runRecord.haltedBeforeWork, verdict) : verdict;
    // A live shadow is never held: not let run (shadow caps full, or a halt), it ends here.
    const refused = shadowNotLetRun(input, first);
    if (refused) return refused;
    const heldOutcome = await holdIfSupervised(input.agent, first, state, runRecord.held, resumed, () => runRecord.supersededBy === undefined);
    if (heldOutcome === CONTINUE_AS_NEW) {
      const record = { ...runRecord.held.record!, continuedAsNew: (runRecord.held.record!.continuedAsNew ?? 0) + 1 };
      await condition(allHandlersFinished);
      await settleReport(reported);
      // Its memo (the fingerprint the gate compares) and search attributes (WakeHeld, the keys) go with it.
      const info = workflowInfo();
      return makeContinueAsNewFunc<typeof runWorkflow>({ memo: info.memo, typedSearchAttributes: info.typedSearchAttributes })({
        ...input,
        ...(policy.version ? { agentVersion: policy.version } : {}),
        resumedHold: runRecord.resumedHold(record),
      });
    }
    if (heldOutcome) return heldOutcome; // discarded
    state.pool = newPool(policy.budget);
    const reset = isReset ? { reset: { ...(resetSlots ? { slots: resetSlots } : {}), ...(slotsReadFor ? { readFor: slotsReadFor } : {}) } } : {};
    return runAgentLoop({ ...input, payload, ...reset }, policy, state, state.pool, workflowNow(), runRecord.steer);
  };

  try {
    const result = runRecord.finish(await runScope.run(work));
    await runRecord.ended(result.terminalReason);
    await startLiveShadow(input, result, shadowSample);
    await settleReport(reported);
    await condition(allHandlersFinished); // an ask to report its end, answered (record.ts `reportEnd`)
    return result;
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err; // a held run going on in its next run (see holdIfSupervised)
    // Cancelled, the run waits for its step in flight to stop; a step whose worker is gone ends in a
    // timeout instead of a cancellation, and that too is the cancellation's doing.
    if (isCancellation(err) || runScope.consideredCancelled) {
      return CancellationScope.nonCancellable(async () => {
        const result = runRecord.finish({
          reason: 'cancelled',
          summary: cancelledSummary(runRecord),
          output: { phase: state.phase, committed: state.effects },
        });
        await runRecord.ended('cancelled');
        await settleReport(reported);
        await condition(allHandlersFinished);
        return result;
      });
    }
    runRecord.closeSteer();
    runRecord.done = true;
    runRecord.record('failed');
    await runRecord.ended('failed', true);
    await settleReport(reported);
    await condition(allHandlersFinished);
    if (err instanceof ApplicationFailure) throw err;
    // Name the root cause (an activity's own failure, not "Activity task failed") and keep the chain.
    let root = err as Error;
    while (root.cause instanceof Error) root = root.cause;
    throw ApplicationFailure.create({ message: `run failed: ${root.message}`, type: FailureType.RunFailed, nonRetryable: true, cause: err as Error });
  }
}

/** The payloads the agent merges (its `mergePayload`): every event the run took, or its one event's. */
function payloadsOf(input: RunInput): Record<string, unknown>[] {
  const { origin } = input;
  if ((origin.kind === 'batch' || origin.kind === 'shadow') && origin.absorbed.length) return origin.absorbed.map((e) => e.payload ?? {});
  if (input.replay?.events) return input.replay.events.map((e) => e.payload ?? {});
  return [input.payload];
}

function cancelledSummary(runRecord: RunRecord): string {
  if (runRecord.killedBy) return `killed by ${runRecord.killedBy.who}: ${runRecord.killedBy.reason}`;
  if (runRecord.supersededBy) return `cancelled by its coalescer: ${runRecord.supersededBy} restarts on the newest state with this run's events`;
  return 'the run was cancelled before it finished';
}
