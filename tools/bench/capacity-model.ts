/**
 * The capacity model of docs/OPERATIONS.md: bench:capacity's per-event operation counts divided into a
 * stated cluster's throughput. The cluster's figures are assumptions (written into the results file's
 * parameters, so the docs say which ones the figures rest on); the counts are measured. Everything is
 * linear: a cluster twice as large sustains twice the events per second on every path.
 */
import { ENTITY_HISTORY_EVENTS } from '../../src/core/history';

/** A cluster's throughput, as the model takes it. */
export interface ClusterAssumption {
  name: string;
  historyEventsPerSecond: number;
  tasksPerSecond: number;
  oneWorkflowTasksPerSecond: number;
  note: string;
}

/** The cluster the model divides into: assumptions, to be replaced by your own cluster's load-test figures. */
export const CLUSTER_ASSUMPTION: Readonly<ClusterAssumption> = {
  name: 'a self-hosted Temporal cluster with 512 history shards',
  historyEventsPerSecond: 10_000,
  tasksPerSecond: 3_000,
  oneWorkflowTasksPerSecond: 50,
  note:
    'assumed, not measured: history events written per second and workflow plus activity tasks dispatched per second for the whole cluster, ' +
    'and workflow tasks one workflow completes per second (its tasks run one at a time: dispatch, the worker, the write; about 20 ms each)',
};

/** A coalescing agent's default dedup horizon (`coalesce.dedupHorizon`): an idle coalescer stays open this long after its newest event. */
export const DEFAULT_DEDUP_HORIZON_S = 86_400;

/** Temporal's limits on one workflow execution, from its documentation. */
export const WORKFLOW_LIMITS = { updatesInFlight: 10, updatesPerRun: 2000, historyEventsHard: 51_200, historyBytesHard: 50 * 2 ** 20 } as const;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : NaN);
const r = (x: number, digits = 0) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : NaN);

export interface PathModel {
  path: string;
  historyEvents: number;
  tasks: number;
  eventsPerSecond: number;
  boundBy: 'history events' | 'tasks';
}

/** Per path: the history events and tasks one event costs (the supervisor's share included) and the events per second the cluster sustains. */
export function pathModels(paths: Json, cluster: ClusterAssumption = CLUSTER_ASSUMPTION): PathModel[] {
  return Object.entries(paths).map(([path, v]) => {
    const p = obj(obj(v).perEvent);
    const s = obj(obj(v).supervisorPerEvent);
    const historyEvents = n(p.historyEvents) + n(s.historyEvents);
    const tasks = n(p.workflowTasks) + n(p.activityTasks) + n(s.workflowTasks) + n(s.activityTasks);
    const byHistory = cluster.historyEventsPerSecond / historyEvents;
    const byTasks = cluster.tasksPerSecond / tasks;
    return {
      path,
      historyEvents: r(historyEvents, 2),
      tasks: r(tasks, 2),
      eventsPerSecond: r(Math.min(byHistory, byTasks)),
      boundBy: byHistory <= byTasks ? 'history events' : 'tasks',
    };
  });
}

/** What one path's coalescer cost per event: workflow tasks, offers per update, history. */
function coalescerOf(path: Json, cluster: ClusterAssumption) {
  const events = n(path.events);
  const c = obj(obj(path.byType).coalescerWorkflow);
  const tasksPerEvent = n(c.workflowTasks) / events;
  const offersPerUpdate = events / n(c.updates);
  return {
    coalescerTasksPerEvent: r(tasksPerEvent, 2),
    offersPerUpdate: r(offersPerUpdate, 2),
    /** What one key takes if its coalescer's workflow tasks are the limit. */
    eventsPerSecond: r(cluster.oneWorkflowTasksPerSecond / tasksPerEvent),
    /**
     * Events one coalescer run takes before it continues as new: at wakegate's own history bound
     * (ENTITY_HISTORY_EVENTS), or at 90% of Temporal's per-run update limit if that came first.
     */
    eventsPerRun: r(Math.min(0.9 * WORKFLOW_LIMITS.updatesPerRun * offersPerUpdate, ENTITY_HISTORY_EVENTS / (n(c.historyEvents) / events))),
    historyEventsPerEvent: r(n(c.historyEvents) / events, 2),
    historyBytesPerEvent: r(n(c.historyBytes) / events),
  };
}

/**
 * The ceilings of one workflow on a hot path: a hot wake key's coalescer, each offer its own update
 * (a key kept hot at a modest rate) and offers sent several to an update (a burst: what a key under more load than its
 * coalescer keeps up with sees); a task queue's supervisor; and what an open wake key holds.
 */
export function hotSpots(paths: Json, cluster: ClusterAssumption = CLUSTER_ASSUMPTION) {
  const burst = obj(paths.permitBurst);
  const supervisor = obj(obj(burst.byType).supervisorWorkflow);
  const runsPerLease = n(burst.runs) / n(supervisor.updates);
  const spread = obj(obj(obj(paths.coalesceSpread).byType).coalescerWorkflow);
  return {
    hotKey: { paced: coalescerOf(obj(paths.coalesceHotKeyPaced), cluster), burst: coalescerOf(obj(paths.coalesceHotKey), cluster) },
    supervisor: {
      runsPerLease: r(runsPerLease, 2),
      /** Runs a second one task queue's supervisor grants if each lease costs it a workflow task. */
      runsPerSecond: r(cluster.oneWorkflowTasksPerSecond * runsPerLease),
    },
    openKey: {
      historyBytes: r(n(spread.historyBytes) / n(spread.executions)),
      historyEvents: r(n(spread.historyEvents) / n(spread.executions), 1),
    },
  };
}

/**
 * Wake keys open at once when every event opens a key of its own at `eventsPerSecond` and each
 * coalescer stays open `horizonS` after it (idle: one timer, no task), and the history they hold.
 */
export function openKeys(eventsPerSecond: number, historyBytesPerKey: number, horizonS = DEFAULT_DEDUP_HORIZON_S) {
  const keys = eventsPerSecond * horizonS;
  return { horizonS, keys: r(keys), historyGb: r((keys * historyBytesPerKey) / 1e9, 1) };
}
