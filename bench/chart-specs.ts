import { capacityPanels } from './chart-capacity';
import type { BenchResultsFile } from './results-file';

/**
 * The chart of each benchmark as a Vega-Lite spec, made from its results file alone (bench/charts.ts
 * renders it to SVG): wakegate's series beside the baseline it is measured against, latency as
 * p50 / p99 (/ max) bars or, where the file holds a histogram, as the distribution, and for the hot
 * wake key its answers and runs over time. Every panel names its units; the chart's subtitle says
 * when the file was made, on what machine and how loaded it was. Nothing here measures or rounds
 * anew: a label is the figure as the file holds it.
 */

type Json = Record<string, unknown>;
/** A Vega-Lite spec, as plain JSON. */
export type Spec = Json;
type Results = BenchResultsFile<Json>;

const WIDTH = 560;
const HEIGHT = 200;

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const nums = (v: unknown): number[] => (Array.isArray(v) ? v.filter(isNum) : []);

/** One bar: its group on the x axis, its series (colour), its value and the label printed over it. */
interface Bar {
  group: string;
  series: string;
  value: number;
  label: string;
}
const bar = (group: string, series: string, v: unknown): Bar[] => (isNum(v) ? [{ group, series, value: v, label: String(v) }] : []);
const order = (xs: string[]) => [...new Set(xs)];

/**
 * A panel's title: its first line, then smaller lines under it. Without a canvas Vega estimates a
 * text's width from its length, generously, and sizes the SVG to fit; short lines keep it compact.
 */
type Title = [string, ...string[]];
/** A legend above the panel, where there is more than one series to tell apart. */
const legendFor = (series: string[]) => (series.length > 1 ? { orient: 'top', direction: 'vertical', labelLimit: 480 } : null);
const heading = ([text, ...subtitle]: Title) => ({ text, anchor: 'start', ...(subtitle.length ? { subtitle } : {}) });

/** Bars grouped on the x axis, one colour per series side by side, each labelled with its value. */
export function groupedBars(title: Title, yTitle: string, rows: Bar[], xTitle: string | null = null): Spec {
  const series = order(rows.map((r) => r.series));
  return {
    title: heading(title),
    width: WIDTH,
    height: HEIGHT,
    data: { values: rows },
    encoding: {
      x: { field: 'group', type: 'nominal', title: xTitle, sort: order(rows.map((r) => r.group)), axis: { labelAngle: 0, labelLimit: 160 } },
      xOffset: { field: 'series', type: 'nominal', sort: series },
      y: { field: 'value', type: 'quantitative', title: yTitle },
      color: { field: 'series', type: 'nominal', sort: series, title: null, legend: legendFor(series) },
    },
    layer: [
      { mark: 'bar' },
      { mark: { type: 'text', baseline: 'bottom', dy: -2, fontSize: 9 }, encoding: { text: { field: 'label' }, color: { value: '#333' } } },
    ],
  };
}

/** Horizontal bars, one row per item in the order given, coloured by series and labelled with their values. */
function rowBars(title: Title, xTitle: string, rows: Bar[]): Spec {
  const series = order(rows.map((r) => r.series));
  return {
    title: heading(title),
    width: WIDTH - 200,
    data: { values: rows },
    encoding: {
      y: { field: 'group', type: 'nominal', title: null, sort: order(rows.map((r) => r.group)), axis: { labelLimit: 520 } },
      x: { field: 'value', type: 'quantitative', title: xTitle },
      color: { field: 'series', type: 'nominal', sort: series, title: null, legend: legendFor(series) },
    },
    layer: [{ mark: 'bar' }, { mark: { type: 'text', align: 'left', dx: 3, fontSize: 9 }, encoding: { text: { field: 'label' }, color: { value: '#333' } } }],
  };
}

/** A latency series: its name, and its stats as the file holds them (`p50`, `p99`, `max`, maybe a `histogram`). */
interface Latency {
  name: string;
  stats: Json;
}

/**
 * Latency of several series: their distributions where every one has a histogram (share of calls
 * per bin, with p50 and p99 marked), otherwise their p50, p99 (and max) side by side.
 */
export function latencyPanel(title: Title, series: Latency[]): Spec {
  const hists = series.map((s) => ({ ...s, h: obj(s.stats.histogram) }));
  if (hists.length && hists.every((s) => isNum(s.h.binMs) && nums(s.h.counts).length)) {
    const binMs = hists[0]!.h.binMs as number;
    const values = hists.flatMap((s) => {
      const counts = nums(s.h.counts);
      const total = counts.reduce((a, b) => a + b, 0) || 1;
      // One point per bin edge, the last repeated, so the step line closes on the largest bin.
      return [...counts, counts.at(-1)!].map((n, i) => ({ series: s.name, ms: i * (s.h.binMs as number), share: Math.round((n / total) * 10000) / 100 }));
    });
    const marks = series.flatMap((s) => ['p50', 'p99'].flatMap((p) => (isNum(s.stats[p]) ? [{ series: s.name, p, ms: s.stats[p] }] : [])));
    const names = series.map((s) => s.name);
    const color = { field: 'series', type: 'nominal', sort: names, title: null, legend: { orient: 'top', direction: 'vertical', labelLimit: 480 } };
    return {
      title: heading([title[0], ...title.slice(1), `the distribution, in bins of ${binMs} ms; dashed: p50, dotted: p99`]),
      width: WIDTH,
      height: HEIGHT,
      layer: [
        {
          data: { values },
          mark: { type: 'line', interpolate: 'step-after' },
          encoding: {
            x: { field: 'ms', type: 'quantitative', title: 'ms' },
            y: { field: 'share', type: 'quantitative', title: 'share of calls per bin, %' },
            color,
          },
        },
        {
          data: { values: marks },
          mark: { type: 'rule' },
          encoding: {
            x: { field: 'ms', type: 'quantitative' },
            color,
            strokeDash: {
              field: 'p',
              type: 'nominal',
              scale: {
                domain: ['p50', 'p99'],
                range: [
                  [6, 3],
                  [1, 2],
                ],
              },
              legend: null,
            },
          },
        },
      ],
    };
  }
  const keys = ['p50', 'p99', 'max'].filter((k) => series.some((s) => isNum(s.stats[k])));
  return groupedBars(
    [title[0], ...title.slice(1), keys.join(', ')],
    'ms',
    series.flatMap((s) => keys.flatMap((k) => bar(k, s.name, s.stats[k]))),
  );
}

/** Rates per round of two series at the same concurrency, and their totals: the comparison the benchmark is about. */
function roundRates(
  title: Title,
  yTitle: string,
  a: { name: string; rounds: unknown; total: unknown },
  b: { name: string; rounds: unknown; total: unknown },
): Spec {
  const rows = (s: typeof a) => [...nums(s.rounds).flatMap((v, i) => bar(`round ${i + 1}`, s.name, v)), ...bar('all rounds', s.name, s.total)];
  return groupedBars(title, yTitle, [...rows(a), ...rows(b)]);
}

const gate = (r: Json): Spec[] => {
  const lat = obj(r.startLatencyMs);
  const perRound = obj(r.perRound);
  const storm = obj(r.storm);
  const raw = 'raw client.workflow.start, unique IDs';
  const gated = 'the gate, unique keys (one-call path)';
  return [
    roundRates(
      ['Start rate at the same concurrency', `gate / raw: ${String(r.ratio)} on the totals`],
      'starts per second',
      { name: raw, rounds: perRound.raw, total: r.rawStartsPerSecond },
      { name: gated, rounds: perRound.gate, total: r.gateStartsPerSecond },
    ),
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
    rowBars(['Where the lag goes', 'the median of each hop on the way'], 'ms (median)', hops),
  ];
};
/** The schedules file names its lag figures p50Ms, p99Ms, maxMs. */
const lagStats = (v: unknown): Json => {
  const s = obj(v);
  return { p50: s.p50Ms, p99: s.p99Ms, max: s.maxMs, ...(s.histogram ? { histogram: s.histogram } : {}) };
};

const coalesce = (r: Json): Spec[] => {
  const hot = obj(r.hotKey);
  const many = obj(r.manyKeys);
  const rss = obj(r.rssMb);
  const manyKeys = `${String(many.keys)} wake keys × ${String(many.eventsPerKey)} events`;
  return [
    ...hotKeyPanels(hot),
    rowBars(['Events per second', `one hot wake key, then ${manyKeys}, key after key`], 'events per second', [
      ...bar('one hot wake key: offered', 'offered', hot.offeredPerSecond),
      ...bar('one hot wake key: answered', 'achieved (answered)', hot.achievedPerSecond),
      ...bar(`${manyKeys}: answered`, 'achieved (answered)', many.achievedPerSecond),
    ]),
    latencyPanel(
      ['Time to answer an offer'],
      [
        { name: 'one hot wake key', stats: obj(hot.answerMs) },
        { name: manyKeys, stats: obj(many.answerMs) },
      ],
    ),
    groupedBars(['RSS of the benchmark process', 'the gate and the worker'], 'MB', [
      ...bar('before', 'RSS', rss.before),
      ...bar('after the hot key', 'RSS', rss.afterHotKey),
      ...bar('after the many keys', 'RSS', rss.afterManyKeys),
    ]),
  ];
};

/** The hot key: its answers per second by decision and each run it started, over time (where the file has a timeline); its decisions; its runs against the bound. */
function hotKeyPanels(hot: Json): Spec[] {
  const t = obj(hot.timeline);
  const perSecond = obj(t.answersPerSecond);
  const runs = (Array.isArray(t.runs) ? t.runs : []) as Json[];
  const decisions = rowBars(['One hot wake key: its decisions', `${String(hot.offered)} distinct events offered`], 'events', [
    ...Object.entries(obj(hot.decisions)).flatMap(([d, n]) => bar(d, 'events', n)),
  ]);
  const bound = rowBars(
    [
      'One hot wake key: runs started',
      'against the bound of seconds / maxWait + 1',
      ...(Object.keys(perSecond).length ? [] : ['this results file has no timeline of them']),
    ],
    'runs',
    [...bar('runs started', 'runs started', hot.runsStarted), ...bar('bound', 'bound', hot.runBound)],
  );
  if (!Object.keys(perSecond).length) return [decisions, bound];
  const names = Object.keys(perSecond);
  const answers = names.flatMap((decision) => nums(perSecond[decision]).flatMap((n, s) => (n ? [{ decision, s, s1: s + 1, n }] : [])));
  const end = Math.max(...answers.map((a) => a.s1), ...runs.map((x) => (isNum(x.endS) ? x.endS : 0)), 1);
  const x = { field: 's', type: 'quantitative', title: 'seconds since the first offer', scale: { domain: [0, Math.ceil(end)] } };
  return [
    {
      title: heading(['One hot wake key over time', 'offers answered per second, by decision']),
      width: WIDTH,
      height: HEIGHT,
      data: { values: answers },
      mark: 'bar',
      encoding: {
        // Pre-binned seconds: bars from s to s + 1, stacked by decision.
        x: { ...x, bin: { binned: true, step: 1 } },
        x2: { field: 's1' },
        y: { field: 'n', type: 'quantitative', title: 'answers per second', stack: 'zero' },
        color: { field: 'decision', type: 'nominal', sort: names, title: null, legend: { orient: 'top', direction: 'horizontal' } },
      },
    },
    {
      title: heading(['Its runs over time', `${runs.length} run(s), each from its start to its end; bound ${String(hot.runBound)}`]),
      width: WIDTH,
      height: Math.max(40, 14 * runs.length),
      data: { values: runs.map((x, i) => ({ run: `run ${i + 1}`, s: x.startS, s1: isNum(x.endS) ? x.endS : end })) },
      mark: { type: 'bar', color: '#6a3d9a' },
      encoding: { x, x2: { field: 's1' }, y: { field: 'run', type: 'nominal', title: null, sort: null } },
    },
    decisions,
    bound,
  ];
}

const ingress = (r: Json): Spec[] => {
  const lat = obj(r.latencyMs);
  const perRound = obj(r.perRound);
  const queue = obj(r.queue);
  const burst = obj(r.burst);
  const rss = obj(burst.rssMb);
  const raw = 'raw client.workflow.start, unique IDs';
  const webhook = 'signed webhook → 202 (verify, parse, gate, start)';
  const samples = nums(rss.samples);
  const rssTitle: Title = ['RSS of the ingress process', `during a sustained ${String(burst.seconds)} s burst; flat: nothing buffers`];
  const rssPanel: Spec = samples.length
    ? {
        title: heading(rssTitle),
        width: WIDTH,
        height: HEIGHT,
        data: { values: samples.map((mb, i) => ({ s: (i * (isNum(rss.sampleEveryMs) ? rss.sampleEveryMs : 250)) / 1000, mb })) },
        mark: 'line',
        encoding: { x: { field: 's', type: 'quantitative', title: 'seconds into the burst' }, y: { field: 'mb', type: 'quantitative', title: 'RSS, MB' } },
      }
    : groupedBars(rssTitle, 'MB', [
        ...bar('at the start', 'RSS', rss.start),
        ...bar('mean, first third', 'RSS', rss.firstThirdMean),
        ...bar('mean, last third', 'RSS', rss.lastThirdMean),
        ...bar('max', 'RSS', rss.max),
      ]);
  return [
    roundRates(
      ['Accepts per second at the same concurrency', `webhook / raw: ${String(r.ratio)} on the totals`],
      'accepted per second',
      { name: raw, rounds: perRound.raw, total: r.rawStartsPerSecond },
      { name: webhook, rounds: perRound.webhook, total: r.webhookAcceptsPerSecond },
    ),
    latencyPanel(
      ['Time to accept, one call'],
      [
        { name: raw, stats: obj(lat.raw) },
        { name: webhook, stats: obj(lat.webhook) },
      ],
    ),
    rowBars(['A queue backlog and a webhook burst', 'the queue drained by one consumer; webhooks sustained'], 'accepted per second', [
      ...bar(`queue: ${String(queue.messages)} messages`, 'accepted and acked', queue.acceptedPerSecond),
      ...bar(`webhooks: a ${String(burst.seconds)} s burst`, 'accepted (202)', burst.acceptedPerSecond),
    ]),
    rssPanel,
  ];
};

const cli = (r: Json): Spec[] => {
  const startup = obj(r.startup);
  const emits = obj(r.emits);
  return [
    latencyPanel(
      ['Start-up of wakegate --help', `${String(startup.runs)} fresh processes each, spawn to exit`],
      [
        { name: 'the compiled bin', stats: obj(startup.ms) },
        { name: 'the same from source through tsx', stats: obj(obj(startup.fromSourceThroughTsx).ms) },
      ],
    ),
    latencyPanel(
      ['A burst of wakegate emit processes', `${String(emits.calls)} processes, ${String(emits.parallel)} at a time, spawn to exit`],
      [{ name: 'answered emits', stats: obj(emits.answerMs) }],
    ),
    rowBars(['The burst: answered, and runs that succeeded'], 'processes / runs', [
      ...bar('emit processes started', 'sent', emits.calls),
      ...bar('emits answered', 'answered', emits.answered),
      ...bar('runs that ended success', 'ended success', emits.runsSucceeded),
    ]),
  ];
};

const PANELS: Record<string, { headline: string; panels: (r: Json) => Spec[] }> = {
  gate: { headline: 'the gate against a raw workflow start', panels: gate },
  run: { headline: 'the run machinery against a bare workflow', panels: run },
  schedules: { headline: "from a window's nominal time to its run's first step", panels: schedules },
  coalesce: { headline: 'one hot wake key, then many keys, through the coalescer', panels: coalesce },
  ingress: { headline: 'signed webhooks and a queue against a raw workflow start', panels: ingress },
  cli: { headline: "the wakegate command's start-up, and a burst of emits", panels: cli },
  capacity: { headline: 'what one event costs Temporal, counted from the histories, per path', panels: capacityPanels },
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
