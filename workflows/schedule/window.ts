import { defineSearchAttributeKey, SearchAttributeType, WorkflowExecutionAlreadyStartedError, type SearchAttributePair } from '@temporalio/common';
import {
  ApplicationFailure,
  ChildWorkflowFailure,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';
import type { CatchUp, ScheduleTickResult, TickReport } from '../../src/core/schedule-types';
import { isoSeconds } from '../../src/core/time';
import type { ScheduledRunInput, RunResult } from '../../src/core/run-types';

/**
 * A schedule's window as the workflow the Temporal Schedule started sees it (the tick of a coalescing
 * agent, or the run of a one-call agent): its nominal time, and the catch-up decision that Temporal
 * does not make on its own.
 */

const { latestDueWindow } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10 },
});

/** Set by Temporal on every workflow a Schedule starts: the nominal (pre-jitter) time, in seconds. */
const TemporalScheduledStartTime = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/** No wakegate schedule fires more often than this (spec.every and delay are at least 1 s). */
const MIN_INTERVAL_MS = 1000;

/**
 * The nominal time of this workflow's window. Temporal's own TemporalScheduledStartTime comes first;
 * the `-<RFC3339>` suffix Temporal appends to the workflow ID is the fallback (same value, in case the
 * attribute is not indexed); a workflow started by hand (no schedule) uses its own start time.
 */
export function nominalOf(): { nominal: string; source: ScheduleTickResult['nominalSource'] } {
  const info = workflowInfo();
  const sa = info.typedSearchAttributes.get(TemporalScheduledStartTime);
  if (sa instanceof Date && Number.isFinite(sa.getTime())) return { nominal: isoSeconds(sa.getTime()), source: 'search_attribute' };
  const m = /-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$/.exec(info.workflowId);
  if (m) return { nominal: m[1]!, source: 'workflow_id' };
  return { nominal: isoSeconds(info.runStartTime.getTime()), source: 'start_time' };
}

/**
 * The catch-up policy Temporal does not have: `skip` declines a window that starts more than
 * `lateAfterMs` after its nominal time; `latest` folds a late window into the newest one already due
 * (only a window at least 1 s late, the shortest interval, can have a newer one due: an on-time
 * window skips the look-up). `startedMs` is workflow time at the first activation, when the window
 * gets to decide (not its start time: a window started just before the server went down decides only
 * after it is back).
 */
export async function catchUpDecision(
  policy: { scheduleId: string; catchUp: CatchUp; lateAfterMs: number },
  nominal: string,
  startedMs: number,
): Promise<TickReport> {
  const late = startedMs - Date.parse(nominal);
  if (policy.catchUp === 'skip' && late > policy.lateAfterMs) return { nominal, outcome: 'late_skipped' };
  if (policy.catchUp === 'latest' && late >= MIN_INTERVAL_MS) {
    const latest = await latestDueWindow({ scheduleId: policy.scheduleId, afterIso: nominal });
    if (latest) return { nominal, outcome: 'coalesced', into: latest };
  }
  return { nominal, outcome: 'run' };
}

/**
 * Run a schedule's window as a child of this run, under the window's run key, and wait for it (the
 * newest due window a late one folds into, workflows/schedule/window-run.ts): the gate's reuse
 * policy (a completed window never runs again, a failed one may), its index and fingerprint memo, and
 * parent-close `REQUEST_CANCEL` (cancelling this run cancels the child and waits for it to end
 * `cancelled`; a terminated one asks it to cancel). Undefined when the ID is taken (the window fired
 * twice). A failed child fails this run too (non-retryable `ScheduledWakeFailed`, with `details`),
 * so `pauseOnFailure` can act.
 */
export async function runWindowAsChild(
  workflowId: string,
  arg: ScheduledRunInput,
  typedSearchAttributes: SearchAttributePair[],
  details: { nominal: string } & Record<string, unknown>,
): Promise<RunResult | undefined> {
  let child;
  try {
    child = await startChild('runWorkflow', {
      workflowId,
      args: [arg],
      typedSearchAttributes,
      memo: { fingerprint: arg.fingerprint },
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    throw err;
  }
  try {
    return (await child.result()) as RunResult;
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && !isCancellation(err)) {
      throw ApplicationFailure.nonRetryable(
        `the run ${workflowId} of window ${details.nominal} failed: ${err.cause?.message ?? err.message}`,
        FailureType.ScheduledWakeFailed,
        details,
      );
    }
    throw err;
  }
}
