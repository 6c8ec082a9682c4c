import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { eventActions, historyActions, totalActions, zeroActions, type ActionCounts } from '../../tools/bench/cost-actions';

/*
 * bench:cost's reading of Temporal Cloud's published list of billable actions
 * (https://docs.temporal.io/cloud/actions) from history events: one event type at a time, then the
 * rules that look at a whole history (a task's markers, signal-with-start, retries).
 */

type Ev = temporal.api.history.v1.IHistoryEvent;
const E = temporal.api.enums.v1.EventType;
let nextId = 1;
const ev = (eventType: temporal.api.enums.v1.EventType, attrs: Partial<Ev> = {}): Ev => ({ eventId: nextId++, eventType, ...attrs }) as Ev;
const total = (e: Ev) => totalActions(eventActions(e));

describe('billable actions by history event type', () => {
  test('each event type counts as the docs list it', () => {
    const cases: [temporal.api.enums.v1.EventType, number][] = [
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 1],
      [E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 1],
      [E.EVENT_TYPE_TIMER_STARTED, 1],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 1],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 1],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED, 1],
      [E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, 1],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED, 1],
      [E.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED, 1],
      [E.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED, 1],
      [E.EVENT_TYPE_MARKER_RECORDED, 1],
      // Counted elsewhere: the new run's start, the signalled workflow's history.
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 0],
      [E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, 0],
      // Not on the list at all.
      [E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 0],
      [E.EVENT_TYPE_WORKFLOW_TASK_STARTED, 0],
      [E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 0],
      [E.EVENT_TYPE_WORKFLOW_TASK_FAILED, 0],
      [E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 0],
      [E.EVENT_TYPE_ACTIVITY_TASK_FAILED, 0],
      [E.EVENT_TYPE_TIMER_FIRED, 0],
      [E.EVENT_TYPE_TIMER_CANCELED, 0],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED, 0],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 0],
      [E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, 0],
      [E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, 0],
      [E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, 0],
      [E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 0],
    ];
    for (const [type, n] of cases) assert.equal(total(ev(type)), n, E[type]);
  });

  test('a search attribute upsert is one action, however many attributes; TemporalChangeVersion alone is exempt', () => {
    const upsert = (...keys: string[]) =>
      ev(E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, {
        upsertWorkflowSearchAttributesEventAttributes: { searchAttributes: { indexedFields: Object.fromEntries(keys.map((k) => [k, {}])) } },
      });
    assert.equal(total(upsert('WakeOutcome', 'WakeTokens', 'WakeCostUsd')), 1);
    assert.equal(total(upsert('TemporalChangeVersion')), 0);
    assert.equal(total(upsert('TemporalChangeVersion', 'WakeOutcome')), 1);
  });

  test('an activity retry is an action: the started event carries the attempt', () => {
    assert.deepEqual(eventActions(ev(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { attempt: 1 } })), {});
    assert.deepEqual(eventActions(ev(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { attempt: 3 } })), { activityRetry: 2 });
  });

  test('a reset is an action; any other failed workflow task is not', () => {
    const C = temporal.api.enums.v1.WorkflowTaskFailedCause;
    const failed = (cause: temporal.api.enums.v1.WorkflowTaskFailedCause) =>
      ev(E.EVENT_TYPE_WORKFLOW_TASK_FAILED, { workflowTaskFailedEventAttributes: { cause } });
    assert.equal(total(failed(C.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW)), 1);
    assert.equal(total(failed(C.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE)), 0);
  });
});

describe('billable actions of a history', () => {
  const counts = (events: Ev[]): Partial<ActionCounts> =>
    Object.fromEntries(Object.entries(historyActions(events).actions).filter(([, n]) => n > 0)) as Partial<ActionCounts>;

  test('a bare workflow with three activities: its start and the three', () => {
    nextId = 1;
    const events = [
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      ...[1, 2, 3].flatMap(() => [
        ev(E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
        ev(E.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { attempt: 1 } }),
        ev(E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
        ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
        ev(E.EVENT_TYPE_WORKFLOW_TASK_STARTED),
        ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      ]),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
    ];
    const read = historyActions(events);
    assert.equal(read.events, 23);
    assert.equal(totalActions(read.actions), 4);
    assert.deepEqual(counts(events), { workflowStarted: 1, activityScheduled: 3 });
  });

  test("one workflow task's markers are one action (local activities), the next task's another; local retries from the task's metering", () => {
    nextId = 1;
    const events = [
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, { workflowTaskCompletedEventAttributes: { meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 } } }),
      ev(E.EVENT_TYPE_MARKER_RECORDED),
      ev(E.EVENT_TYPE_MARKER_RECORDED),
      ev(E.EVENT_TYPE_MARKER_RECORDED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      ev(E.EVENT_TYPE_MARKER_RECORDED),
    ];
    assert.deepEqual(counts(events), { workflowStarted: 1, localActivity: 2, localActivityRetry: 2 });
  });

  test('signal-with-start that starts the workflow is one action in all; a later signal-with-start or signal is one each', () => {
    nextId = 1;
    const started = [ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)];
    const later = [ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)];
    assert.deepEqual(counts([...started, ...later]), { workflowStarted: 1, signal: 2 });
    // A plain start, then a signal: two actions.
    nextId = 1;
    assert.deepEqual(
      counts([ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED), ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)]),
      {
        workflowStarted: 1,
        signal: 1,
      },
    );
  });

  test('update-with-start is the start and the update; continue-as-new is counted at the next run’s start', () => {
    nextId = 1;
    const first = [
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED),
      ev(E.EVENT_TYPE_TIMER_STARTED),
      ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW),
    ];
    nextId = 1;
    const next = [ev(E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ev(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)];
    assert.deepEqual(counts(first), { workflowStarted: 1, update: 1, timer: 1 });
    assert.deepEqual(counts(next), { workflowStarted: 1 });
  });

  test('nothing read, nothing counted', () => {
    assert.deepEqual(historyActions([]), { events: 0, actions: zeroActions() });
  });
});
