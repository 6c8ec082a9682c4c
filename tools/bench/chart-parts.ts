/**
 * The building blocks of the benchmarks' charts (tools/bench/chart-specs.ts): Vega-Lite panels of bars,
 * rows and latency distributions, each labelled with the figures as the results file holds them.
 */
export type Json = Record<string, unknown>;
/** A Vega-Lite spec, as plain JSON. */
export type Spec = Json;

export const WIDTH = 560;
export const HEIGHT = 200;

export const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
export const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
export const nums = (v: unknown): number[] => (Array.isArray(v) ? v.filter(isNum) : []);

/** One bar: its group on the x axis, its series (colour), its value and the label printed over it. */
export interface Bar {
  group: string;
  series: string;
  value: number;
  label: string;
}
export const bar = (group: string, series: string, v: unknown): Bar[] => (isNum(v) ? [{ group, series, value: v, label: String(v) }] : []);
export const order = (xs: string[]) => [...new Set(xs)];

/**
 * A panel's title: its first line, then smaller lines under it. Without a canvas Vega estimates a
 * text's width from its length, generously, and sizes the SVG to fit; short lines keep it compact.
 */
export type Title = [string, ...string[]];
/** A legend above the panel, where there is more than one series to tell apart. */
export const legendFor = (series: string[]) => (series.length > 1 ? { orient: 'top', direction: 'vertical', labelLimit: 480 } : null);
export const heading = ([text, ...subtitle]: Title) => ({ text, anchor: 'start', ...(subtitle.length ? { subtitle } : {}) });

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
export function rowBars(title: Title, xTitle: string, rows: Bar[]): Spec {
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
export interface Latency {
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
        {
          // Each mark's figure, at the top of its rule (one row per series, so two series do not overlap).
          data: { values: marks.map((m) => ({ ...m, row: names.indexOf(m.series) })) },
          mark: { type: 'text', align: 'left', dx: 3, baseline: 'top', fontSize: 10 },
          encoding: {
            x: { field: 'ms', type: 'quantitative' },
            y: { value: { expr: 'datum.row * 12' } },
            text: { field: 'ms', type: 'quantitative' },
            color,
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

/** Rates per round of two (or more) series at the same concurrency, and their totals: the comparison the benchmark is about. */
export function roundRates(title: Title, yTitle: string, ...series: { name: string; rounds: unknown; total: unknown }[]): Spec {
  const rows = (s: (typeof series)[number]) => [...nums(s.rounds).flatMap((v, i) => bar(`round ${i + 1}`, s.name, v)), ...bar('all rounds', s.name, s.total)];
  return groupedBars(title, yTitle, series.flatMap(rows));
}
