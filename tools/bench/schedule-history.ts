import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** What bench:schedules reads from the fires' histories: when each hop on the way to the run's first step happened. */
const EventType = temporal.api.enums.v1.EventType;

export async function list(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const rows: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query })) rows.push(wf);
  return rows;
}

type History = temporal.api.history.v1.IHistoryEvent[];
const atMs = (ev: temporal.api.history.v1.IHistoryEvent | undefined): number | undefined =>
  ev?.eventTime ? Number(ev.eventTime.seconds) * 1000 + Math.floor((ev.eventTime.nanos ?? 0) / 1e6) : undefined;
const first = (h: History, type: temporal.api.enums.v1.EventType) => atMs(h.find((e) => e.eventType === type));
export const historyOf = async (client: Client, workflowId: string, runId?: string): Promise<History> =>
  (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];

/**
 * Where one workflow's share of the lag goes, from its history: started (by the Schedule or the
 * parent) → its first workflow task dispatched → that task completed → the first activity of the
 * named type started (the run's first step: `prepareRun` for wakegate's run, which a window's ledger
 * report beside it must not stand in for).
 */
export function hops(
  h: History,
  activityType: string,
): { startedMs?: number; dispatchMs?: number; taskMs?: number; toActivityMs?: number; activityStartedMs?: number; activityMs?: number } {
  const started = first(h, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const taskStarted = first(h, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const taskDone = first(h, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const scheduled = h.find(
    (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  );
  const activityStarted = atMs(
    h.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
        String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    ),
  );
  const activityDone = atMs(
    h.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED &&
        String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    ),
  );
  const diff = (a?: number, b?: number) => (a !== undefined && b !== undefined ? a - b : undefined);
  return {
    startedMs: started,
    dispatchMs: diff(taskStarted, started),
    taskMs: diff(taskDone, taskStarted),
    toActivityMs: diff(activityStarted, taskDone),
    activityStartedMs: activityStarted,
    activityMs: diff(activityDone, activityStarted),
  };
}

export const nominalFromId = (id: string) => Date.parse(id.slice(id.lastIndexOf('/') + 1).replace(/^.*-(\d{4}-)/, '$1'));
