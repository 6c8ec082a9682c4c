import { temporal } from '@temporalio/proto';

/**
 * Temporal Cloud's billable actions, read from workflow histories: what bench:cost counts. The rules
 * are Temporal Cloud's published list, https://docs.temporal.io/cloud/actions ("Temporal Cloud
 * Actions": each category with its History Event Type), applied event by event:
 * - Workflow: `WorkflowExecutionStarted` 1 (a client start, a Continue-As-New's new run, a child's
 *   start, a Schedule's start, the start of an update-with-start; a de-duplicated start writes no
 *   event). `WorkflowExecutionContinuedAsNew` 0: "the UI shows a billable action only for the
 *   EVENT_TYPE_WORKFLOW_EXECUTION_STARTED event of the newly started Workflow", counted there.
 *   `StartChildWorkflowExecutionInitiated` 1 for the intent; the docs' second action of a child, "the
 *   attempt to start it", is the child's own `WorkflowExecutionStarted`, counted in its history.
 *   `UpsertWorkflowSearchAttributes` 1 per command, 0 when it sets `TemporalChangeVersion` alone
 *   (exempt); `WorkflowExecutionOptionsUpdated` 1; a reset (`WorkflowTaskFailed` with cause
 *   RESET_WORKFLOW) 1. A memo upsert (`WorkflowPropertiesModified`) is not on the list: 0.
 * - Activity: `ActivityTaskScheduled` 1, and each retry: `ActivityTaskStarted` carries the attempt,
 *   attempt - 1 retries. Local activities: "all RecordMarkers from each Workflow Task" count as one
 *   action (the markers after one `WorkflowTaskCompleted`), and their retries are the completed task's
 *   `meteringMetadata.nonfirstLocalActivityExecutionAttempts`.
 * - Timer: `TimerStarted` 1 (the SDK's own timers too: a `condition` with a timeout).
 * - Signal: `WorkflowExecutionSignaled` 1, in the signalled workflow's history (a workflow's
 *   `SignalExternalWorkflowExecutionInitiated` is counted there, not in the sender's: 0 here).
 *   Signal-with-start is "one total action ... regardless of whether the Workflow starts": when it
 *   starts the workflow its signal is written right after the start (event 2), and that pair is one.
 * - Update: `WorkflowExecutionUpdateAccepted` 1 (and `Rejected`, which the server never writes).
 * - Nexus: `NexusOperationScheduled` and `NexusOperationCancelRequested` 1.
 * Everything else (workflow tasks, completions, fired timers, activity results) is 0.
 *
 * Billable but not in any history, so not counted here (bench:cost adds what it can count itself):
 * queries, activity heartbeats that reach the server, updates rejected by a validator, workflow task
 * heartbeats, and a Schedule's own two actions per fire ("Schedule Start ... accounts for two actions").
 */

export const ACTIONS_SOURCE = 'https://docs.temporal.io/cloud/actions';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const E = temporal.api.enums.v1.EventType;

/** The action categories counted, as the docs name them. */
export const ACTION_KINDS = [
  'workflowStarted',
  'childStartInitiated',
  'searchAttributeUpsert',
  'workflowOptionsUpdated',
  'reset',
  'activityScheduled',
  'activityRetry',
  'localActivity',
  'localActivityRetry',
  'timer',
  'signal',
  'update',
  'nexus',
] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];
export type ActionCounts = Record<ActionKind, number>;

export const zeroActions = (): ActionCounts => Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as ActionCounts;

/** What one event adds, besides its type: the neighbours two rules look at. */
export interface EventContext {
  /** The event before it in the same history (signal-with-start). */
  previous?: HistoryEvent;
  /** A marker was already counted for the workflow task this event belongs to. */
  markerCounted?: boolean;
}

const CHANGE_VERSION = 'TemporalChangeVersion';

/** The billable actions one history event stands for, by kind (empty when it stands for none). */
export function eventActions(event: HistoryEvent, ctx: EventContext = {}): Partial<ActionCounts> {
  switch (event.eventType) {
    case E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
      return { workflowStarted: 1 };
    case E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
      return { childStartInitiated: 1 };
    case E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
      const keys = Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
      return keys.length === 1 && keys[0] === CHANGE_VERSION ? {} : { searchAttributeUpsert: 1 };
    }
    case E.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
      return { workflowOptionsUpdated: 1 };
    case E.EVENT_TYPE_WORKFLOW_TASK_FAILED:
      return event.workflowTaskFailedEventAttributes?.cause === temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
        ? { reset: 1 }
        : {};
    case E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
      return { activityScheduled: 1 };
    case E.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
      const retries = Math.max(0, (event.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
      return retries ? { activityRetry: retries } : {};
    }
    case E.EVENT_TYPE_MARKER_RECORDED:
      return ctx.markerCounted ? {} : { localActivity: 1 };
    case E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: {
      const retries = event.workflowTaskCompletedEventAttributes?.meteringMetadata?.nonfirstLocalActivityExecutionAttempts ?? 0;
      return retries ? { localActivityRetry: retries } : {};
    }
    case E.EVENT_TYPE_TIMER_STARTED:
      return { timer: 1 };
    case E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: {
      const withStart = Number(event.eventId) === 2 && ctx.previous?.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
      return withStart ? {} : { signal: 1 };
    }
    case E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
    case E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED:
      return { update: 1 };
    case E.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
    case E.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
      return { nexus: 1 };
    default:
      return {};
  }
}

/** The sum of counts, kind by kind. */
export function addActions(a: ActionCounts, b: Partial<ActionCounts>): ActionCounts {
  const out = { ...a };
  for (const k of ACTION_KINDS) out[k] += b[k] ?? 0;
  return out;
}

export const totalActions = (c: Partial<ActionCounts>): number => ACTION_KINDS.reduce((s, k) => s + (c[k] ?? 0), 0);

/**
 * The billable actions of a run of history events (one execution's history, or the part of it in a
 * measured period), by kind, with the number of events read.
 */
export function historyActions(events: readonly HistoryEvent[]): { events: number; actions: ActionCounts } {
  let actions = zeroActions();
  let markerCounted = false;
  let previous: HistoryEvent | undefined;
  for (const event of events) {
    // A workflow task's markers follow its WorkflowTaskCompleted: a new task, a new action.
    if (event.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) markerCounted = false;
    actions = addActions(actions, eventActions(event, { previous, markerCounted }));
    if (event.eventType === E.EVENT_TYPE_MARKER_RECORDED) markerCounted = true;
    previous = event;
  }
  return { events: events.length, actions };
}

/** When an event was written, in epoch ms. */
export const eventTimeMs = (e: HistoryEvent): number => (e.eventTime ? Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : NaN);
