import { bar, groupedBars, isNum, obj, rowBars, type Bar, type Json, type Spec } from './chart-parts';

/**
 * bench:cost's chart panels (from its results file alone): per path, the billable actions of a wake
 * beside the bare workflow's and the supervisor's share; the history events beside them; each figure
 * against its target; and the idle fleet's actions an hour.
 */

const pathsOf = (r: Json) => Object.entries(obj(r.paths)).map(([name, v]) => [name, obj(v)] as const);

export function costPanels(r: Json): Spec[] {
  const paths = pathsOf(r);
  const idle = obj(r.idle);
  const targets = (Array.isArray(r.targets) ? r.targets : []) as Json[];
  const perWake = (title: [string, ...string[]], y: string, key: 'actionsPerWake' | 'historyEventsPerWake', bareKey: 'actions' | 'historyEvents') =>
    groupedBars(
      title,
      y,
      paths.flatMap(([name, p]): Bar[] => {
        const w = obj(p[key]);
        const wake = key === 'actionsPerWake' ? w.wake : ['run', 'coalescer', 'other'].reduce((s, k) => s + (isNum(w[k]) ? w[k] : 0), 0);
        return [
          ...bar(name, 'the wake (run, coalescer, schedule, ledger)', isNum(wake) ? Math.round(wake * 1000) / 1000 : wake),
          ...bar(name, "the supervisor's share", w.supervisor),
          ...bar(name, 'a bare workflow with the same activities', obj(p.bare)[bareKey]),
        ];
      }),
    );
  return [
    perWake(["Billable actions per wake, by Temporal Cloud's list", String(r.source ?? '')], 'actions per wake', 'actionsPerWake', 'actions'),
    perWake(['History events per wake'], 'history events per wake', 'historyEventsPerWake', 'historyEvents'),
    rowBars(
      ['Each figure over its target: at most 1 meets it', 'labelled with the figure and its target'],
      'figure / target',
      targets
        .filter((t) => t.path !== undefined)
        .flatMap((t) =>
          isNum(t.value) && isNum(t.target)
            ? [
                {
                  group: `${String(t.path)}: ${String(t.figure)}`,
                  series: t.met ? 'met' : 'missed',
                  value: Math.round((t.value / t.target) * 100) / 100,
                  label: `${t.value} (target <= ${t.target})`,
                },
              ]
            : [],
        ),
    ),
    rowBars(
      ['The idle fleet: a worker and no wake', `${String(idle.seconds)} s measured, ${String(idle.afterStartS)} s after its start; actions an hour`],
      'actions per hour',
      [
        ...Object.entries(obj(idle.byKindPerHour)).flatMap(([kind, n]) => bar(`measured: ${kind}`, 'measured', n)),
        ...bar('measured: all', 'measured', idle.actionsPerHour),
        ...bar('target', 'target', idle.target),
      ],
    ),
  ];
}
