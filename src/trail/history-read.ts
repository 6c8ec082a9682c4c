import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { DECODED_ACTIVITIES, DECODED_SIGNALS, DECODED_UPDATES, type RecordedEvent } from './history';

type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
type Failure = temporal.api.failure.v1.IFailure | null | undefined;

/** The first value of a payload list, decoded with the client's data converter (its codecs included). */
export async function first(client: Client, payloads: Payloads): Promise<unknown> {
  if (!payloads?.payloads?.length) return undefined;
  const [value] = await decodeArrayFromPayloads(client.options.loadedDataConverter, payloads.payloads);
  return value;
}

/** A failure's innermost message and application type (an activity's own failure, not "Activity task failed"). */
function failureOf(f: Failure): { message: string; type?: string } {
  let cur = f;
  while (cur?.cause) cur = cur.cause;
  const type = cur?.applicationFailureInfo?.type ?? f?.applicationFailureInfo?.type ?? undefined;
  return { message: cur?.message ?? f?.message ?? 'failed', ...(type ? { type } : {}) };
}

/**
 * A workflow's history as the trail reads it ({@link RecordedEvent}): its start, activities and
 * their ends, signals, children, its close. Only the payloads the trail uses are decoded: the
 * workflow's input and result, `prepareRun` and `commitEffect` activities, the approval, delivery
 * and skip signals, a coalescer's `offer` updates and children's results. Model and tool calls are
 * counted, never decoded.
 */
export async function recordedHistory(client: Client, history: History): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  const types = new Map<string, string>();
  const updates = new Map<string, string>();
  for (const e of history.events ?? []) {
    const at = e.eventTime ? new Date(tsToMs(e.eventTime)).toISOString() : '';
    const id = String(e.eventId ?? '');
    if (e.workflowExecutionStartedEventAttributes) {
      const started = e.workflowExecutionStartedEventAttributes;
      out.push({
        kind: 'started',
        at,
        input: await first(client, started.input),
        ...(started.firstExecutionRunId ? { firstRunId: started.firstExecutionRunId } : {}),
      });
    } else if (e.activityTaskScheduledEventAttributes) {
      const a = e.activityTaskScheduledEventAttributes;
      const activityType = a.activityType?.name ?? '';
      types.set(id, activityType);
      out.push({ kind: 'activity', id, at, activityType, ...(DECODED_ACTIVITIES.has(activityType) ? { input: await first(client, a.input) } : {}) });
    } else if (e.activityTaskCompletedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes;
      const scheduledId = String(a.scheduledEventId ?? '');
      const decode = DECODED_ACTIVITIES.has(types.get(scheduledId) ?? '');
      out.push({ kind: 'activity-done', scheduledId, at, ...(decode ? { result: await first(client, a.result) } : {}) });
    } else if (e.activityTaskFailedEventAttributes) {
      const a = e.activityTaskFailedEventAttributes;
      out.push({ kind: 'activity-failed', scheduledId: String(a.scheduledEventId ?? ''), at, ...failureOf(a.failure) });
    } else if (e.activityTaskTimedOutEventAttributes) {
      out.push({ kind: 'activity-failed', scheduledId: String(e.activityTaskTimedOutEventAttributes.scheduledEventId ?? ''), at, message: 'timed out' });
    } else if (e.activityTaskCanceledEventAttributes) {
      out.push({ kind: 'activity-failed', scheduledId: String(e.activityTaskCanceledEventAttributes.scheduledEventId ?? ''), at, message: 'cancelled' });
    } else if (e.workflowExecutionSignaledEventAttributes) {
      const s = e.workflowExecutionSignaledEventAttributes;
      const name = s.signalName ?? '';
      out.push({ kind: 'signal', at, name, ...(DECODED_SIGNALS.has(name) ? { input: await first(client, s.input) } : {}) });
    } else if (e.startChildWorkflowExecutionInitiatedEventAttributes) {
      out.push({ kind: 'child', at, workflowId: e.startChildWorkflowExecutionInitiatedEventAttributes.workflowId ?? '' });
    } else if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      const req = e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest;
      const name = req?.input?.name ?? '';
      const updateId = req?.meta?.updateId ?? '';
      updates.set(updateId, name);
      out.push({ kind: 'update', at, id: updateId, name, ...(DECODED_UPDATES.has(name) ? { input: await first(client, req?.input?.args) } : {}) });
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) {
      const done = e.workflowExecutionUpdateCompletedEventAttributes;
      const updateId = done.meta?.updateId ?? '';
      const decode = DECODED_UPDATES.has(updates.get(updateId) ?? '') && done.outcome?.success;
      out.push({ kind: 'update-done', at, id: updateId, ...(decode ? { result: await first(client, done.outcome!.success) } : {}) });
    } else if (e.childWorkflowExecutionCompletedEventAttributes) {
      const c = e.childWorkflowExecutionCompletedEventAttributes;
      out.push({ kind: 'child-done', at, workflowId: c.workflowExecution?.workflowId ?? '', result: await first(client, c.result) });
    } else {
      const closed = closedOf(e);
      if (closed) out.push({ kind: 'closed', at, status: closed.status, ...(closed.result ? { result: await first(client, closed.result) } : {}) });
    }
  }
  return out;
}

function closedOf(e: temporal.api.history.v1.IHistoryEvent): { status: string; result?: Payloads } | undefined {
  if (e.workflowExecutionCompletedEventAttributes) return { status: 'COMPLETED', result: e.workflowExecutionCompletedEventAttributes.result };
  if (e.workflowExecutionContinuedAsNewEventAttributes) return { status: 'CONTINUED_AS_NEW', result: e.workflowExecutionContinuedAsNewEventAttributes.input };
  if (e.workflowExecutionFailedEventAttributes) return { status: 'FAILED' };
  if (e.workflowExecutionTerminatedEventAttributes) return { status: 'TERMINATED' };
  if (e.workflowExecutionTimedOutEventAttributes) return { status: 'TIMED_OUT' };
  if (e.workflowExecutionCanceledEventAttributes) return { status: 'CANCELLED' };
  return undefined;
}

/** The workflow's input (its first argument) and, once it has closed, its result (or continue-as-new argument). */
export function inputAndResult(events: readonly RecordedEvent[]): { input?: unknown; result?: unknown; closedStatus?: string } {
  const started = events.find((e) => e.kind === 'started');
  const closed = events.find((e) => e.kind === 'closed');
  return {
    ...(started?.kind === 'started' && started.input !== undefined ? { input: started.input } : {}),
    ...(closed?.kind === 'closed' ? { closedStatus: closed.status, ...(closed.result !== undefined ? { result: closed.result } : {}) } : {}),
  };
}
