import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countHistory, perEvent, zeroCounts } from '../../tools/bench/capacity-count';
import { hotSpots, openKeys, pathModels } from '../../tools/bench/capacity-model';

// bench:capacity counts operations from histories and divides them into a stated cluster's throughput.

describe('the capacity model', () => {
  test('a history is counted by the attributes its events carry, and its bytes are its encoding', () => {
    const history = {
      events: [
        { workflowExecutionStartedEventAttributes: {} },
        { workflowTaskScheduledEventAttributes: {} },
        { workflowTaskStartedEventAttributes: {} },
        { workflowTaskCompletedEventAttributes: {} },
        { activityTaskScheduledEventAttributes: {} },
        { timerStartedEventAttributes: {} },
        { workflowExecutionSignaledEventAttributes: {} },
        { workflowExecutionUpdateAcceptedEventAttributes: {} },
        { workflowTaskScheduledEventAttributes: {} },
      ],
    };
    const c = countHistory(history);
    assert.deepEqual(
      { ...c, historyBytes: 0 },
      { ...zeroCounts(), executions: 1, workflowTasks: 2, activityTasks: 1, timers: 1, signals: 1, updates: 1, historyEvents: 9 },
    );
    assert.ok(c.historyBytes > 9, `${c.historyBytes} bytes`);
    assert.equal(perEvent(c, 4).workflowTasks, 0.5);
  });

  test("events per second: the cluster's budget over the per-event cost, the supervisor's share included, bound by the scarcer", () => {
    const cluster = { name: 't', historyEventsPerSecond: 1000, tasksPerSecond: 100, oneWorkflowTasksPerSecond: 50, note: '' };
    const paths = {
      a: { perEvent: { historyEvents: 9, workflowTasks: 1, activityTasks: 1 }, supervisorPerEvent: { historyEvents: 1, workflowTasks: 0, activityTasks: 0 } },
      b: {
        perEvent: { historyEvents: 40, workflowTasks: 0.5, activityTasks: 0 },
        supervisorPerEvent: { historyEvents: 0, workflowTasks: 0, activityTasks: 0 },
      },
    };
    assert.deepEqual(pathModels(paths, cluster), [
      { path: 'a', historyEvents: 10, tasks: 2, eventsPerSecond: 50, boundBy: 'tasks' },
      { path: 'b', historyEvents: 40, tasks: 0.5, eventsPerSecond: 25, boundBy: 'history events' },
    ]);
  });

  test("a hot key's ceiling is one workflow's task rate over its coalescer's tasks per event; the supervisor's is that rate times runs per lease", () => {
    const cluster = { name: 't', historyEventsPerSecond: 1000, tasksPerSecond: 100, oneWorkflowTasksPerSecond: 50, note: '' };
    const coalescer = (events: number, workflowTasks: number, updates: number) => ({
      events,
      byType: { coalescerWorkflow: { ...zeroCounts(), executions: 1, workflowTasks, updates, historyEvents: 2 * events, historyBytes: 100 * events } },
    });
    const s = hotSpots(
      {
        coalesceHotKeyPaced: coalescer(100, 200, 100),
        coalesceHotKey: coalescer(20, 5, 2),
        permitBurst: { runs: 20, byType: { supervisorWorkflow: { ...zeroCounts(), updates: 4 } } },
        coalesceSpread: coalescer(10, 30, 10),
      },
      cluster,
    );
    assert.equal(s.hotKey.paced.eventsPerSecond, 25);
    // 2 history events per event: 1,000 events of history (wakegate's bound) come before 90% of 2,000 updates.
    assert.equal(s.hotKey.paced.eventsPerRun, 500);
    assert.equal(s.hotKey.burst.offersPerUpdate, 10);
    assert.equal(s.hotKey.burst.eventsPerSecond, 200);
    assert.equal(s.supervisor.runsPerSecond, 250);
    assert.equal(s.openKey.historyBytes, 1000);
    assert.deepEqual(openKeys(10, 1e6, 3600), { horizonS: 3600, keys: 36_000, historyGb: 36 });
  });
});
