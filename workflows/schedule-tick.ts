import { defineSearchAttributeKey, SearchAttributeType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { ScheduleActivities } from './contracts';
import { FailureType } from './failures';
import { agentEventId, eventKey } from './ids';
import type { ScheduleTickInput, ScheduleTickResult, TickReport, WindowRunResult } from './schedule-types';
import { isoSeconds } from './time';
import type { WakeInput } from './types';
import type { wakeWorkflow } from './wake';

const { runScheduledWindow } = proxyActivities<ScheduleActivities>({
  // A window's wake may hold for a long time; the heartbeat notices a dead worker and carries cancellation.
  startToCloseTimeout: '24 hours',
  heartbeatTimeout: '10 seconds',
  // Overlap `cancel`: the tick stays open until its wake has really ended `cancelled`.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 5 },
});

const { latestDueWindow, reportTick } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10 },
});

/** Set by Temporal on every workflow a Schedule starts: the nominal (pre-jitter) time, in seconds. */
const TemporalScheduledStartTime = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/** No wakegate schedule fires more often than this (spec.every and delay are at least 1 s). */
const MIN_INTERVAL_MS = 1000;


/**
 * The one-call path of a window, without an activity round trip: the tick starts the window's run
 * itself, as a child workflow with the gate's ID (`agent@schedule/tick/<id>/<nominal>`), its reuse
 * policy (a completed window never runs again, a failed one may) and its fingerprint memo, and waits
 * for it. Cancelling the tick cancels the run and waits for it to end `cancelled`; a terminated tick
 * asks it to cancel. Returns undefined when the ID is taken (a window fired twice): the gate's
 * activity then answers from the run that holds it, as for any duplicate.
 */
async function startWindowRun(input: ScheduleTickInput, window: string): Promise<WindowRunResult | undefined> {
  const oneCall = input.oneCall!;
  const nominalMs = Date.parse(window);
  const key = eventKey({ source: 'schedule', type: 'tick', entity: input.scheduleId, bucketStartMs: nominalMs });
  const runKey = agentEventId(input.agent, key);
  const run: WakeInput = {
    runKey,
    agent: input.agent,
    wakeKey: oneCall.wakeKey,
    eventKey: key,
    source: 'schedule',
    entity: input.scheduleId,
    type: 'tick',
    occurredAt: new Date(nominalMs).toISOString(),
    bucketStart: isoSeconds(nominalMs),
    payload: oneCall.payload,
    fingerprint: oneCall.fingerprint,
    deliveryId: workflowInfo().workflowId,
  };
  let child;
  try {
    child = await startChild<typeof wakeWorkflow>('wakeWorkflow', {
      workflowId: runKey,
      args: [run],
      memo: { fingerprint: oneCall.fingerprint },
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    throw err;
  }
  const base = { nominal: window, decision: 'started', eventKey: key, workflowId: runKey };
  try {
    const result = await child.result();
    return { ...base, terminalReason: result.terminalReason };
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && !isCancellation(err)) {
      // The wake failed: fail the tick, so `pauseOnFailure` can act.
      throw ApplicationFailure.nonRetryable(`the wake for ${key} failed: ${err.cause?.message ?? err.message}`, FailureType.ScheduledWakeFailed, base);
    }
    throw err;
  }
}

/**
 * The nominal time of this tick. Temporal's own TemporalScheduledStartTime comes first; the
 * `-<RFC3339>` suffix Temporal appends to the workflow ID is the fallback (same value, in case the
 * attribute is not indexed); a tick started by hand (no schedule) uses its own start time.
 */
function nominalOf(): { nominal: string; source: ScheduleTickResult['nominalSource'] } {
  const info = workflowInfo();
  const sa = info.typedSearchAttributes.get(TemporalScheduledStartTime);
  if (sa instanceof Date && Number.isFinite(sa.getTime())) return { nominal: isoSeconds(sa.getTime()), source: 'search_attribute' };
  const m = /-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$/.exec(info.workflowId);
  if (m) return { nominal: m[1]!, source: 'workflow_id' };
  return { nominal: isoSeconds(info.runStartTime.getTime()), source: 'start_time' };
}

/**
 * One tick of a wakegate schedule: the Temporal Schedule's action. Applies the catch-up policy that
 * Temporal does not have on its own (`latest`: fold a late tick into the newest due window; `skip`:
 * decline a tick that starts more than `lateAfterMs` late), reports its decision to the schedule's
 * ledger (gap records), then runs the window through the gate and waits for the wake, so Temporal's
 * overlap policy sees the real run. Cancelling the tick cancels the wake, which ends `cancelled`.
 * Fails when the wake failed (so `pauseOnFailure` pauses the schedule).
 */
export async function scheduleTickWorkflow(input: ScheduleTickInput): Promise<ScheduleTickResult> {
  const { nominal, source } = nominalOf();
  // Workflow time of this first activation: when the tick actually gets to decide. Not the run's
  // start time: a tick started just before the server went down decides only after it is back.
  // eslint-disable-next-line no-restricted-syntax -- workflow time, deterministic on replay
  const startedMs = Date.now();
  const base = { scheduleId: input.scheduleId, nominal, nominalSource: source };

  let window = nominal;
  let report: TickReport = { nominal, outcome: 'run' };
  if (input.catchUp === 'skip' && startedMs - Date.parse(nominal) > input.lateAfterMs) {
    report = { nominal, outcome: 'late_skipped' };
  } else if (input.catchUp === 'latest' && startedMs - Date.parse(nominal) >= MIN_INTERVAL_MS) {
    // Only a tick at least 1 s (the shortest interval) late can have a newer window due: an on-time tick skips the look-up.
    const latest = await latestDueWindow({ scheduleId: input.scheduleId, afterIso: nominal });
    if (latest) {
      window = latest;
      report = { nominal, outcome: 'coalesced', into: latest };
    }
  }
  // The ledger report runs beside the window (not before it, to keep it off the lag), and is not
  // cancelled with the tick: a cancelled window is still a window that was decided.
  const reported = CancellationScope.nonCancellable(() => reportTick({ scheduleId: input.scheduleId, report }));
  if (report.outcome === 'late_skipped') {
    await reported;
    return { ...base, outcome: report.outcome };
  }

  try {
    const run =
      (input.oneCall && (await startWindowRun(input, window))) ??
      (await runScheduledWindow({
        scheduleId: input.scheduleId,
        agent: input.agent,
        nominal: window,
        payload: input.payload,
        deliveryId: workflowInfo().workflowId,
      }));
    await reported;
    return { ...base, outcome: report.outcome, run, ...(report.into ? { into: report.into } : {}) };
  } catch (err) {
    if (isCancellation(err)) {
      // The activity has already cancelled the wake and seen it end; say so in the tick's result.
      return CancellationScope.nonCancellable(async () => {
        await reported;
        return {
          ...base,
          outcome: report.outcome,
          run: { nominal: window, decision: 'cancelled', eventKey: '', workflowId: '', terminalReason: 'cancelled' },
        };
      });
    }
    await reported.catch(() => undefined); // the window's failure is the one to report
    throw err;
  }
}
