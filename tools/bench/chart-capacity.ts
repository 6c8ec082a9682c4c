/**
 * bench:capacity's chart panels (a Vega-Lite spec each, from the results file alone): per path, what
 * one event costs Temporal, as counted from the histories: history events and tasks (workflow plus
 * activity), the path's own and the supervisor's share stacked.
 */

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function stacked(title: string, xTitle: string, paths: Json, of: (c: Json) => number): Json {
  const rows = Object.entries(paths).flatMap(([path, v]) => [
    { path, share: 'the path', value: of(obj(obj(v).perEvent)) },
    { path, share: 'its supervisor', value: of(obj(obj(v).supervisorPerEvent)) },
  ]);
  return {
    title: { text: title, anchor: 'start' },
    width: 360,
    data: { values: rows },
    encoding: {
      y: { field: 'path', type: 'nominal', title: null, sort: Object.keys(paths) },
      x: { field: 'value', type: 'quantitative', title: xTitle, stack: 'zero' },
      color: { field: 'share', type: 'nominal', title: null, sort: ['the path', 'its supervisor'], legend: { orient: 'top' } },
      order: { field: 'share', sort: 'descending' },
    },
    mark: 'bar',
  };
}

export function capacityPanels(r: Json): Json[] {
  const paths = obj(r.paths);
  return [
    stacked('History events per event', 'history events', paths, (c) => num(c.historyEvents)),
    stacked('Tasks per event (workflow + activity)', 'tasks', paths, (c) => num(c.workflowTasks) + num(c.activityTasks)),
    stacked('History bytes per event', 'bytes', paths, (c) => num(c.historyBytes)),
  ];
}
