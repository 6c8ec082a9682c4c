import { activityInfo, cancellationSignal, Context, getClient, heartbeat } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { msNumberToTs, tsToMs } from '@temporalio/common/lib/time';
import { awaitRun } from '../../src/run/await-run';
import { Gate, keyEvent } from '../../src/gate/gate';
import { isoSeconds } from '../../src/core/time';
import type { TriggerRegistry } from '../../src/gate/trigger-registry';
import { SupervisorLink } from '../../src/supervisor/link';
import type { SupervisorPolicy } from '../../src/core/supervisor-types';
import { ledgerWorkflowId } from '../../src/core/schedule-messages';
import type { ScheduleActivities } from '../../src/core/contracts';
import type { GateAnswer } from '../../src/core/decision';
import type { WindowRunResult } from '../../src/core/schedule-types';
import { FailureType } from '../../src/core/failures';

/** Matching times of a schedule's spec in [startMs, endMs], from Temporal itself (ListScheduleMatchingTimes). */
export async function scheduleMatchingTimes(client: Client, scheduleId: string, startMs: number, endMs: number): Promise<number[]> {
  if (endMs < startMs) return [];
  const res = await client.workflowService.listScheduleMatchingTimes({
    namespace: client.options.namespace,
    scheduleId,
    startTime: msNumberToTs(Math.floor(startMs / 1000) * 1000),
    endTime: msNumberToTs(Math.ceil(endMs / 1000) * 1000),
  });
  return (res.startTime ?? []).map((t) => tsToMs(t));
}

/**
 * After a cancel request, how long the tick waits for its wake to end `cancelled` before giving up
 * waiting (the wake is cancelled either way): a worker that shuts down meanwhile can no longer run
 * the wake's cancellation, and must not wait forever.
 */
const CANCEL_WAIT_MS = 15_000;
function cancelBound(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), CANCEL_WAIT_MS).unref(), { once: true }));
}

/**
 * Activities of scheduled wakes. They take the client from the worker (getClient) and wake on the
 * worker's own task queue, so a schedule's tick and its wake run wherever its workers are.
 */
export function createScheduleActivities({ registry, supervisor }: { registry: TriggerRegistry; supervisor: SupervisorPolicy }): ScheduleActivities {
  return {
    /**
     * Pass one window through the same gate as every other trigger (source `schedule`, entity =
     * schedule id, occurredAt = nominal time), then wait for that wake to end so Temporal's overlap
     * policy sees the real run duration. Heartbeats every second; when cancelled (overlap `cancel`,
     * a person cancelling the tick) it cancels the window's wake and waits until it has ended
     * (`cancelled`), at most 15 s. A retry re-enters the gate, which answers `in_progress` and waits again.
     * Fails (non-retryable) when the wake failed, so the tick fails and `pauseOnFailure` can act.
     */
    async runScheduledWindow(input) {
      const client = getClient();
      const info = activityInfo();
      const gate = new Gate({
        client,
        taskQueue: info.taskQueue,
        registry,
        supervisor: new SupervisorLink({ client, taskQueue: info.taskQueue, policy: supervisor }),
      });
      // The nominal time comes from Temporal's clock, not a producer's: judge it against the later of
      // this worker's clock and the server's (a time-skipping test server runs ahead of both).
      const nowMs = Math.max(Date.now(), info.currentAttemptScheduledTimestampMs);
      const event = {
        source: 'schedule',
        entity: input.scheduleId,
        type: 'tick',
        occurredAt: input.nominal,
        payload: input.payload,
        deliveryId: input.deliveryId,
      };
      const answer = await gate.admitKeyed(keyEvent(registry, event, { agent: input.agent, nowMs }));
      const base = { nominal: input.nominal, decision: answer.decision, eventKey: answer.eventKey, workflowId: answer.runKey };
      if (answer.decision === 'mismatch') {
        throw ApplicationFailure.nonRetryable(answer.message ?? 'mismatch', FailureType.ScheduleWindowMismatch, base);
      }
      if (answer.decision === 'stale') return base;
      if (answer.result && !answer.result.supersededBy) return { ...base, terminalReason: answer.result.terminalReason };
      return followWake(client, answer, base);
    },

    /**
     * The newest nominal time of the schedule's spec that is later than `afterIso` and already due
     * (<= now), or undefined. catchUp `latest` folds a late tick into it.
     */
    async latestDueWindow({ scheduleId, afterIso }) {
      const times = await scheduleMatchingTimes(getClient(), scheduleId, Date.parse(afterIso) + 1000, Date.now());
      const due = times.filter((t) => t > Date.parse(afterIso) && t <= Date.now());
      return due.length ? isoSeconds(due[due.length - 1]!) : undefined;
    },

    /** Nominal times of the schedule's spec strictly between two nominal times (the ledger's gap check). */
    async windowsBetween({ scheduleId, afterIso, beforeIso }) {
      const after = Date.parse(afterIso);
      const before = Date.parse(beforeIso);
      if (before - after <= 1000) return [];
      const times = await scheduleMatchingTimes(getClient(), scheduleId, after + 1000, before - 1000);
      return times.filter((t) => t > after && t < before).map(isoSeconds);
    },

    /** Hand a tick's decision to the schedule's ledger, starting the ledger if it is not running. */
    async reportTick({ scheduleId, report }) {
      await getClient().workflow.signalWithStart('scheduleLedgerWorkflow', {
        workflowId: ledgerWorkflowId(scheduleId),
        taskQueue: activityInfo().taskQueue,
        args: [{ scheduleId, gaps: [], droppedGaps: 0, reports: 0 }],
        signal: 'tickReport',
        signalArgs: [report],
      });
    },
  };
}

/**
 * Wait for the wake that took the window to end, heartbeating every second; see runScheduledWindow
 * for what a cancellation does. Fails (non-retryable) when the wake failed.
 */
async function followWake(client: Client, answer: GateAnswer, base: WindowRunResult): Promise<WindowRunResult> {
  // The run that took the window: it may have taken other wakes too (coalescing), or still be pending.
  const handle = client.workflow.getHandle(answer.runKey);
  const beat = setInterval(() => heartbeat(answer.decision), 1000);
  const ctx = Context.current();
  const signal = cancellationSignal();
  // Worker shutdown: stop waiting and leave the wake running (a retry on another worker waits
  // again). The tick cancelled (overlap `cancel`, a person): cancel the wake and wait for it to
  // end `cancelled`. The tick gone (terminated): cancel the wake, nobody is left to wait.
  let abandon: (err: unknown) => void = () => undefined;
  const abandoned = new Promise<never>((_, reject) => (abandon = reject));
  const onAbort = () => {
    const details = ctx.cancellationDetails;
    if (details?.cancelRequested || details?.notFound) {
      ctx.log.info('scheduled window cancelled: cancelling its wake', { eventKey: answer.eventKey });
      // Its run, never its coalescer (an offer taken by signal names the coalescer, undecided yet).
      if (answer.runKey !== answer.coalescerId) handle.cancel().catch(() => undefined);
    }
    if (!details?.cancelRequested) abandon(signal.reason);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await Promise.race([awaitRun(client, answer, { onWait: () => heartbeat(answer.decision), signal }), abandoned, cancelBound(signal)]);
    return { ...base, terminalReason: result.terminalReason };
  } catch (err) {
    if (err instanceof WorkflowFailedError) {
      throw ApplicationFailure.nonRetryable(
        `the wake for ${answer.eventKey} failed: ${err.cause?.message ?? err.message}`,
        FailureType.ScheduledWakeFailed,
        base,
      );
    }
    throw err;
  } finally {
    clearInterval(beat);
    signal.removeEventListener('abort', onAbort);
  }
}
