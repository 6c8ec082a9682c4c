import { ENTITY_HISTORY_EVENTS } from '../../src/core/history';
import { CLUSTER_ASSUMPTION, hotSpots, openKeys, pathModels, WORKFLOW_LIMITS } from '../bench/capacity-model';

/**
 * The generated section of bench:capacity (docs/OPERATIONS.md): the per-event operation counts of
 * `tools/bench/results/capacity.json`, then the capacity model (tools/bench/capacity-model.ts) on them, with the
 * cluster it assumes named. `other` reads another benchmark's results (the hot key measured by
 * bench:coalesce is shown beside the model's ceiling).
 */

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const num = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: 3 }) : '–');
const row = (...cells: unknown[]) => `| ${cells.map((c) => String(c)).join(' | ')} |`;

const LABELS: Record<string, string> = {
  oneCall: 'one-call (gate, events one after another)',
  permitBurst: 'one-call, events at once (permits leased in blocks)',
  coalesceHotKey: 'coalescing: a burst on one wake key',
  coalesceHotKeyPaced: 'coalescing: one wake key kept hot (one event per 50 ms)',
  coalesceSpread: 'coalescing: each event on a wake key of its own',
  webhook: 'signed webhook (ingress → gate → run)',
  queue: 'queue (Redis stream → consumer → gate → run)',
  schedule: "schedule window (the Schedule starts the run; ledger, Temporal's scheduler)",
};
const label = (path: string) => LABELS[path] ?? `\`${path}\``;

export function capacityLines(r: Json, other: (name: string) => Json | undefined): string[] {
  const paths = obj(r.paths);
  const entries = Object.entries(paths).map(([path, v]) => [path, obj(v)] as const);
  const calls = (v: Json) =>
    Object.entries(obj(v.rpc))
      .map(([m, n]) => `${num(n)} ${m}`)
      .join(', ') || 'none';
  const models = pathModels(paths);
  const spots = hotSpots(paths);
  const c = CLUSTER_ASSUMPTION;
  const measuredHot = obj(obj(other('coalesce')).hotKey);
  const spreadRate = models.find((m) => m.path === 'coalesceSpread')?.eventsPerSecond ?? NaN;
  const open = openKeys(spreadRate, spots.openKey.historyBytes);
  const hu = spots.hotKey.paced;
  const hb = spots.hotKey.burst;
  return [
    '**Per event, counted from the histories** (the path without its supervisor; a run is counted from start to close):',
    '',
    row(
      'path',
      'events',
      'workflow starts',
      'workflow tasks',
      'activity tasks',
      'updates',
      'signals',
      'timers',
      'history events',
      'history bytes',
      'entry calls',
    ),
    row('---', '---', '---', '---', '---', '---', '---', '---', '---', '---', '---'),
    ...entries.map(([path, v]) => {
      const p = obj(v.perEvent);
      return row(
        label(path),
        num(v.events),
        num(p.executions),
        num(p.workflowTasks),
        num(p.activityTasks),
        num(p.updates),
        num(p.signals),
        num(p.timers),
        num(p.historyEvents),
        num(Math.round(p.historyBytes as number)),
        num(v.rpcPerEvent),
      );
    }),
    '',
    "**The supervisor's share, per event** (updates are permit leases, signals the gate's wake counts (one per interval) and permits handed back; its timers and activity tasks are its own visibility reads, which grow with time, not events):",
    '',
    row('path', 'runs', 'updates (leases)', 'signals', 'workflow tasks', 'history events'),
    row('---', '---', '---', '---', '---', '---'),
    ...entries.map(([path, v]) => {
      const s = obj(v.supervisorPerEvent);
      return row(label(path), num(v.runs), num(s.updates), num(s.signals), num(s.workflowTasks), num(s.historyEvents));
    }),
    '',
    `Entry calls, in total by gRPC method: ${entries.map(([path, v]) => `${path}: ${calls(v)}`).join('; ')}.`,
    '',
    `**The model.** Assumed cluster: ${c.name}, writing ${num(c.historyEventsPerSecond)} history events a second and dispatching ` +
      `${num(c.tasksPerSecond)} tasks a second; one workflow completes ${num(c.oneWorkflowTasksPerSecond)} workflow tasks a second (${c.note}). ` +
      "Dividing by the costs above, the supervisor's share included:",
    '',
    row('path', 'history events per event', 'tasks per event', 'events per second the cluster sustains', 'bound by'),
    row('---', '---', '---', '---', '---'),
    ...models.map((m) => row(label(m.path), num(m.historyEvents), num(m.tasks), `**${num(m.eventsPerSecond)}**`, m.boundBy)),
    '',
    `**Where one workflow is the bottleneck.** A hot wake key's coalescer. Kept hot at a modest rate, each offer is an update of its own ` +
      `(${num(hu.offersPerUpdate)} offers per update, ${num(hu.coalescerTasksPerEvent)} coalescer workflow tasks per event): near ` +
      `**${num(hu.eventsPerSecond)} events a second** one key's coalescer is busy all the time, however large the cluster. Past that, offers queue behind ` +
      `each gate process's two updates in flight and go several to an update (up to 200; the burst: ${num(hb.offersPerUpdate)} per update, ` +
      `${num(hb.coalescerTasksPerEvent)} tasks per event, about ${num(hb.eventsPerSecond)} a second at the same task rate), so answers slow before anything is refused; ` +
      `what one key then takes is bound by the work one workflow task does and by its history, not by the cluster. ` +
      `On this machine bench:coalesce measured ${num(measuredHot.achievedPerSecond)} a second on one key offered more than it kept up with. ` +
      `Paced, a coalescer run takes about ${num(hu.eventsPerRun)} events before its history reaches ${num(ENTITY_HISTORY_EVENTS)} events and it continues as new ` +
      `(wakegate's own bound, so that a worker taking it over replays little; Temporal's ${num(WORKFLOW_LIMITS.updatesPerRun)} updates per run come later); ` +
      `its history grows ${num(hu.historyEventsPerEvent)} events and ${num(hu.historyBytesPerEvent)} bytes per event ` +
      `(Temporal's hard limits per run: ${num(WORKFLOW_LIMITS.historyEventsHard)} events, ${num(WORKFLOW_LIMITS.historyBytesHard / 2 ** 20)} MB). ` +
      `A task queue's supervisor granted ${num(spots.supervisor.runsPerLease)} runs per lease in the burst; at one workflow task per lease it grants about ` +
      `**${num(spots.supervisor.runsPerSecond)} runs a second** per task queue, with at most ${num(WORKFLOW_LIMITS.updatesInFlight)} leases in flight. ` +
      `An open wake key's coalescer holds ${num(spots.openKey.historyEvents)} history events (${num(spots.openKey.historyBytes)} bytes) for one event and its run; ` +
      'idle until its horizon, it costs one timer and no task. ' +
      `So open wake keys are bound by storage, not throughput: with every event on a key of its own at the ${num(spreadRate)} a second above ` +
      `and the default dedup horizon of ${num(open.horizonS / 3600)} h, about **${num(open.keys)} wake keys** are open at once, holding about ${num(open.historyGb)} GB of history.`,
  ];
}
