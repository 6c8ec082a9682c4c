/**
 * The generated section of bench:cost (docs/BENCHMARKS.md), from `tools/bench/results/cost.json` alone: per
 * path the history events and billable actions of a wake beside the bare workflow's, the
 * supervisor's share, each figure against its target, and the idle fleet's actions an hour.
 */

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const num = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(v) : '–');
const row = (...cells: unknown[]) => `| ${cells.map((c) => String(c)).join(' | ')} |`;
const kinds = (v: unknown) =>
  Object.entries(obj(v))
    .map(([k, n]) => `${num(n)} ${k}`)
    .join(', ') || 'none';
const met = (t: Json) => (t.met ? 'met' : '**missed**');

export function costLines(r: Json): string[] {
  const paths = Object.entries(obj(r.paths)).map(([name, v]) => [name, obj(v)] as const);
  const targets = (Array.isArray(r.targets) ? r.targets : []) as Json[];
  const idle = obj(r.idle);
  const events = (p: Json) => {
    const h = obj(p.historyEventsPerWake);
    return `${num(h.run)} + ${num(h.coalescer)} + ${num(h.other)}; ${num(h.supervisor)}`;
  };
  const actions = (p: Json) => {
    const a = obj(p.actionsPerWake);
    const rest = [
      ...(Number(a.other) ? [`${num(a.other)} other workflows`] : []),
      ...(Number(a.scheduleStarts) ? [`${num(a.scheduleStarts)} Schedule`] : []),
      ...(Number(a.queries) ? [`${num(a.queries)} queries`] : []),
    ];
    return `**${num(a.wake)}** (run ${num(a.run)}, coalescer ${num(a.coalescer)}${rest.length ? `, ${rest.join(', ')}` : ''})`;
  };
  return [
    `Actions as [Temporal Cloud's published list](${String(r.source)}) counts them, read from every history (\`tools/bench/cost-actions.ts\`). ` +
      "A wake's figures are its run's, its coalescer's and (for a window) its schedule's ledger's and the Schedule's own two actions per fire, " +
      "per run; the supervisor's share is its actions from the first wake until it is idle again after the path settled (its worker up meanwhile), over the wakes; " +
      "the bare workflow makes each run's own steps " +
      'with the inputs the run gave them.',
    '',
    row(
      'path',
      'wakes (events)',
      'history events per wake: run + coalescer + other; supervisor',
      'actions per wake',
      'bare workflow: events, actions',
      'wake / bare',
      "supervisor's actions per wake",
    ),
    row('---', '---', '---', '---', '---', '---', '---'),
    ...paths.map(([name, p]) =>
      row(
        `\`${name}\`: ${String(p.label)}`,
        `${num(p.wakes)} (${num(p.events)})`,
        events(p),
        actions(p),
        `${num(obj(p.bare).historyEvents)}, **${num(obj(p.bare).actions)}**`,
        `**${num(p.overBare)}**${p.perEventOverBare !== undefined ? ` (per event ${num(p.perEventOverBare)})` : ''}`,
        `${num(obj(p.actionsPerWake).supervisor)}${p.supervisorSpan ? ` (idle again ${num(obj(p.supervisorSpan).secondsAfterSettled)} s after)` : ''}`,
      ),
    ),
    '',
    row('path', 'a wake’s actions by kind', "the supervisor's, per wake", 'the bare workflow’s', 'runs ended', 'answers'),
    row('---', '---', '---', '---', '---', '---'),
    ...paths.map(([name, p]) =>
      row(`\`${name}\``, kinds(p.wakeByKind), kinds(p.supervisorByKind), kinds(obj(p.bare).byKind), kinds(p.outcomes), kinds(p.answers)),
    ),
    '',
    `The idle fleet, a worker on a task queue of its own and no wake, over ${num(idle.seconds)} s from ${num(idle.afterStartS)} s after its start: ` +
      `**${num(idle.actions)} actions, ${num(idle.actionsPerHour)} an hour** (${kinds(idle.byKindPerHour)} an hour; activities: ${kinds(idle.activities)}; ` +
      `${num(idle.historyEvents)} history events; continued as new ${num(idle.continuedAsNew)} times).`,
    '',
    row('figure', 'measured', 'target', ''),
    row('---', '---', '---', '---'),
    ...targets.map((t) => row(`${t.path ? `\`${String(t.path)}\`: ` : ''}${String(t.figure)}`, num(t.value), `<= ${num(t.target)}`, met(t))),
  ];
}
