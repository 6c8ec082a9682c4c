import { capacityPanels } from './chart-capacity';
import type { BenchResultsFile } from './results-file';
import { bar, groupedBars, heading, HEIGHT, isNum, latencyPanel, obj, rowBars, WIDTH, type Json, type Spec } from './chart-parts';
import { coalesce, ingress } from './chart-coalesce';
import { costPanels } from './chart-cost';

export type { Spec } from './chart-parts';
type Results = BenchResultsFile<Json>;

/**
 * The chart of each benchmark as a Vega-Lite spec, made from its results file alone (tools/bench/charts.ts
 * renders it to SVG): wakegate's series beside the baseline it is measured against, latency as
 * p50 / p99 (/ max) bars or, where the file holds a histogram, as the distribution, and for the hot
 * wake key its answers and runs over time. Every panel names its units; the chart's subtitle says
 * when the file was made, on what machine and how loaded it was. Nothing here measures or rounds
 * anew: a label is the figure as the file holds it.
 */

const gate = (r: Json): Spec[] => {
  const lat = obj(r.startLatencyMs);
  const storm = obj(r.storm);
  const interval = obj(r.interval);
  const spread = obj(r.spread);
  const raw = 'raw client.workflow.start, unique IDs';
  const gated = 'the gate, unique keys (one-call path)';
  return [
    rowBars(
      [
        'Start rate at the same concurrency',
        `side by side, each in a process of its own, ${String(interval.blocks)} spans of ${String(interval.blockSeconds)} s`,
      ],
      'starts per second',
      [...bar(raw, 'starts per second', r.rawStartsPerSecond), ...bar(gated, 'starts per second', r.gateStartsPerSecond)],
    ),
    rowBars(['gate / raw start rate', `on the totals with its paired block bootstrap interval; the spread of each span's own ratio`], 'gate rate / raw rate', [
      ...bar('all spans', 'figure', r.ratio),
      ...bar('95% low', 'interval', interval.lo),
      ...bar('95% high', 'interval', interval.hi),
      ...bar('span min', 'spread', spread.min),
      ...bar('span q1', 'spread', spread.q1),
      ...bar('span median', 'spread', spread.median),
      ...bar('span q3', 'spread', spread.q3),
      ...bar('span max', 'spread', spread.max),
    ]),
    latencyPanel(
      ['Time to start, one call'],
      [
        { name: raw, stats: obj(lat.raw) },
        { name: gated, stats: obj(lat.gate) },
      ],
    ),
    latencyPanel(
      [
        'Storm: one event delivered many times at once',
        `${String(storm.deliveries)} deliveries started ${String(storm.executions)} execution(s); time to answer`,
      ],
      [{ name: 'answers to the deliveries', stats: obj(storm.answerMs) }],
    ),
  ];
};

const run = (r: Json): Spec[] => {
  const series = (Array.isArray(r.series) ? r.series : []) as Json[];
  const find = (name: string) => obj(series.find((s) => s.name === name));
  const pair = (title: string, wake: string, bare: string) =>
    latencyPanel(
      [title, 'accepted wake → terminal state, sequential runs'],
      [
        { name: `${wake}: the wakegate run`, stats: find(wake) },
        { name: `${bare}: its activities in a bare workflow`, stats: find(bare) },
      ],
    );
  return [pair('A no_op run', 'no_op run (wake)', 'no_op steps (bare)'), pair('A three-step run', 'three-step run (wake)', 'three steps (bare)')];
};

const rollout = (r: Json): Spec[] => {
  const panel = (key: string, title: string, what: string) =>
    latencyPanel(
      [title, what],
      ((Array.isArray(r[key]) ? r[key] : []) as Json[]).map((s) => ({ name: String(s.name), stats: s })),
    );
  return [
    panel('answer', "The gate's answer", 'event → accepted; the gate reads no rollout'),
    panel('admission', "The run's admission into work", 'run started → its first step done (with a rollout: the view read, the version pinned)'),
    panel('wake', 'The whole wake', 'event → terminal, two tool steps'),
  ];
};

const schedules = (r: Json): Spec[] => {
  const hops = Object.entries(obj(r.medianHopsMs)).flatMap(([name, ms]) => {
    const series = name.split(/[,:]/)[0]!.trim();
    return bar(`${series}: ${name.slice(name.indexOf(': ') + 2)}`, series, ms);
  });
  return [
    latencyPanel(
      ["Lag from a window's nominal time", "to its run's first activity"],
      [
        { name: 'wakegate: the Schedule starts the run', stats: lagStats(r.wakegate) },
        { name: 'bare Temporal: a Schedule starting a one-activity workflow', stats: lagStats(r.bareTemporal) },
        { name: 'reference: a bare Schedule starting the run workflow', stats: lagStats(r.reference) },
      ],
    ),
    ...spanRatios(r),
    rowBars(['Where the lag goes', 'the median of each hop on the way'], 'ms (median)', hops),
  ];
};
/** The ratio over all fires (the figure) with its interval, and the spread of each span's own p50 ratio to bare. */
const spanRatios = (r: Json): Spec[] => {
  const wg = obj(r.ratio);
  const ref = obj(obj(r.reference).ratio);
  if (!Array.isArray(wg.perBlock)) return [];
  const seconds = String(obj(wg.interval).blockSeconds);
  const rows = (name: string, x: Json) => {
    const i = obj(x.interval);
    const sp = obj(x.spread);
    return [
      ...bar('all fires', name, x.p50),
      ...bar('95% low', name, i.lo),
      ...bar('95% high', name, i.hi),
      ...bar('span min', name, sp.min),
      ...bar('span q1', name, sp.q1),
      ...bar('span q3', name, sp.q3),
      ...bar('span max', name, sp.max),
    ];
  };
  return [
    groupedBars(
      [
        'p50 ratio to bare (the series side by side)',
        `over all fires with its paired block bootstrap interval; the spread of the ${seconds} s spans' own ratios`,
      ],
      'p50 / bare p50',
      [...rows('wakegate: the Schedule starts the run', wg), ...rows('reference: a bare Schedule starting the run workflow', ref)],
    ),
  ];
};
/** The schedules file names its lag figures p50Ms, p99Ms, maxMs. */
const lagStats = (v: unknown): Json => {
  const s = obj(v);
  return { p50: s.p50Ms, p99: s.p99Ms, max: s.maxMs, ...(s.histogram ? { histogram: s.histogram } : {}) };
};

const cli = (r: Json): Spec[] => {
  const startup = obj(r.startup);
  const targets = obj(r.targets);
  const d = obj(r.deployments);
  const names: [string, string][] = [
    ['ts', 'TypeScript deployment (tsx)'],
    ['js', 'compiled JavaScript deployment'],
  ];
  const of = (name: string) => obj(d[name]);
  const burst0 = obj(of('ts').burst);
  const head = obj(obj(r.headline).singleOverNode);
  const fileHead = obj(obj(r.headline).fileOverRaw);
  const file = obj(r.file);
  return [
    latencyPanel(
      ['Start-up of wakegate --help', `${String(startup.runs)} fresh processes each, spawn to exit`],
      [
        { name: 'the compiled bin', stats: obj(startup.ms) },
        { name: 'the same from source through tsx', stats: obj(obj(startup.fromSourceThroughTsx).ms) },
      ],
    ),
    latencyPanel(
      [
        'wakegate emit, one at a time',
        `${String(obj(of('ts').single).calls)} processes in a row, spawn to exit, each after a node -e 0; target p50 <= ${String(targets.singleP50Ms)} ms`,
        ...(isNum(head.figure)
          ? [`compiled deployment over node -e 0: ${String(head.figure)}x at p50, target <= ${String(head.target)}x: ${head.met ? 'met' : 'missed'}`]
          : []),
      ],
      [
        ...names.map(([k, label]) => ({ name: `${label}, resident process`, stats: obj(obj(of(k).single).answerMs) })),
        ...(r.inProcess ? [{ name: 'compiled deployment, each in its own process', stats: obj(obj(obj(r.inProcess).single).answerMs) }] : []),
        ...(obj(obj(of('js').single).nodeMs).p50 !== undefined ? [{ name: 'node -e 0, beside them', stats: obj(obj(of('js').single).nodeMs) }] : []),
      ],
    ),
    latencyPanel(
      [
        'A burst of wakegate emit processes',
        `${String(burst0.calls)} processes, ${String(burst0.parallel)} at a time, spawn to exit; target p50 <= ${String(targets.burstP50Ms)} ms`,
      ],
      names.map(([k, label]) => ({ name: label, stats: obj(obj(of(k).burst).answerMs) })),
    ),
    rowBars(
      ['The emits: answered, and runs that succeeded'],
      'processes / runs',
      names.flatMap(([k, label]) => {
        const x = of(k);
        // The compiled deployment's runs include those of its emits each in its own process (WAKEGATE_RESIDENT=off).
        const own = k === 'js' ? obj(obj(r.inProcess).single) : {};
        const calls = Number(obj(x.single).calls) + Number(obj(x.burst).calls) + Number(own.calls ?? 0);
        return [
          ...bar('emit processes started', label, calls),
          ...bar('emits answered', label, Number(obj(x.single).answered) + Number(obj(x.burst).answered) + Number(own.answered ?? 0)),
          ...bar('runs that ended success', label, x.runsSucceeded),
        ];
      }),
    ),
    ...(r.file
      ? [
          rowBars(
            [
              'wakegate emit --file against raw starts',
              `${String(file.events)} events at ${String(file.concurrency)} at a time, spawn to exit; raw: client.workflow.start, unique IDs`,
              `--file over raw: ${String(fileHead.figure)}, target >= ${String(fileHead.target)}: ${fileHead.met ? 'met' : 'missed'}`,
            ],
            'events (starts) per second',
            [
              ...bar('raw starts, before and after', 'per second', obj(file.raw).startsPerSecond),
              ...bar('emit --file', 'per second', obj(file.file).eventsPerSecond),
              ...bar('emit --file again (answered from its runs)', 'per second', obj(file.rerun).eventsPerSecond),
            ],
          ),
        ]
      : []),
  ];
};

const memory = (r: Json): Spec[] => {
  const procs = Object.entries(obj(r.processes)).map(([name, p]) => ({ name, p: obj(p) }));
  const values = procs.flatMap(({ name, p }) =>
    ((Array.isArray(p.samples) ? p.samples : []) as [number, number][]).map(([s, mb]) => ({ process: `${name} (${String(p.role)})`, min: s / 60, mb })),
  );
  const verdicts = procs
    .filter(({ p }) => p.role === 'worker')
    .map(({ name, p }) => `${name}: ${String(p.slopeMbPerHour)} MB/h once warm (${p.flat ? 'flat' : 'growing'})`);
  return [
    {
      title: heading(['RSS of every process of the topology', ...verdicts]),
      width: WIDTH,
      height: HEIGHT * 1.5,
      data: { values },
      mark: 'line',
      encoding: {
        x: { field: 'min', type: 'quantitative', title: 'minutes into the load' },
        y: { field: 'mb', type: 'quantitative', title: 'RSS, MB' },
        color: { field: 'process', type: 'nominal', legend: { orient: 'top', direction: 'vertical', labelLimit: 480 } },
      },
    },
  ];
};

const PANELS: Record<string, { headline: string; panels: (r: Json) => Spec[] }> = {
  gate: { headline: 'the gate against a raw workflow start', panels: gate },
  run: { headline: 'the run machinery against a bare workflow', panels: run },
  schedules: { headline: "from a window's nominal time to its run's first step", panels: schedules },
  coalesce: { headline: 'one hot wake key, then many keys, through the coalescer', panels: coalesce },
  ingress: { headline: 'signed webhooks and a queue against a raw workflow start', panels: ingress },
  cli: { headline: "the wakegate command's start-up, its emits one at a time and in a burst, and emit --file", panels: cli },
  capacity: { headline: 'what one event costs Temporal, counted from the histories, per path', panels: capacityPanels },
  cost: { headline: "what a wake costs in Temporal Cloud's billable actions, beside a bare workflow", panels: costPanels },
  memory: { headline: 'the RSS of each process under steady load, no faults', panels: memory },
  rollout: { headline: "what a ramp of an agent's versions adds to a wake, side by side with no rollout", panels: rollout },
};

/** The benchmarks that have a chart. */
export const CHARTED = Object.keys(PANELS);

/** When and where the file was made, in two short lines: the date, then the machine and its load. */
export function provenanceLines(f: Results): string[] {
  const m = f.machine;
  return [
    `${f.at.slice(0, 16).replace('T', ' ')} UTC, ${f.durationS} s; ${m.cpus} × ${m.cpuModel}, ${m.memoryGb} GB, Node ${m.node}`,
    `load average ${m.loadavgAtStart[0] ?? '–'} at the start, ${m.loadavgAtEnd[0] ?? '–'} at the end (1 min)`,
  ];
}

/** The whole chart of one results file: a title, the date and machine line, the command, any problems found, then the panels one under another. */
export function chartSpec(f: Results): Spec {
  const chart = PANELS[f.bench];
  if (!chart) throw new Error(`no chart for a benchmark named "${f.bench}" (known: ${CHARTED.join(', ')})`);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `bench:${f.bench}: ${chart.headline}`,
      subtitle: [...provenanceLines(f), f.command, ...f.problems.map((p) => `problem the benchmark found: ${p}`)],
      anchor: 'start',
      fontSize: 15,
      subtitlePadding: 6,
      offset: 12,
    },
    background: 'white',
    padding: 12,
    spacing: 36,
    vconcat: chart.panels(f.results),
    resolve: { scale: { color: 'independent', x: 'independent', y: 'independent' }, legend: { color: 'independent' } },
    config: { font: 'Helvetica, Arial, sans-serif', title: { fontSize: 12, subtitleFontSize: 11 }, axis: { labelFontSize: 10, titleFontSize: 11 } },
  };
}
