import escapeHtml from 'escape-html';
import type { CounterView } from '../core/supervisor-types';

/*
 * The small charts of the `/supervisor` page: each sliding cap's window (what it counted, bucket by
 * bucket, and how full it is against its limit) and the wakes per minute beside the storm
 * threshold. Plain inline SVG built here rather than Vega (which draws the benchmarks' charts):
 * the page is rendered synchronously on every request of the operator's listener, and a handful of
 * bars does not need a charting grammar loaded into the ingress process. Every label is escaped,
 * since agent names and scopes come from users' code. Each chart carries its figures as data
 * attributes and a <title> per mark, so a test or a screen reader reads what a person sees.
 */

const e = (v: unknown) => escapeHtml(String(v ?? ''));
/** Coordinates to a tenth of a pixel: enough for a 300 px chart, and short markup. */
const px = (x: number) => String(Math.round(x * 10) / 10);
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 19);
/** A counter's amount as people read it: spend to a hundredth of a cent, counts as they are. */
const amount = (v: number) => String(Math.round(v * 1e4) / 1e4);

/** A window's length in words: `1 h`, `15 min`, `30 s`. */
export const durationLabel = (ms: number): string =>
  ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;

const COUNTER_W = 240;
const COUNTER_H = 34;
const GAUGE_H = 8;

/**
 * One counter's window: its buckets as bars over the last `windowMs` up to `atMs`, and under them
 * a gauge of `value` against `limit` (red once at the limit). Empty when the status carries no buckets.
 */
export function counterChart(c: CounterView, atMs: number): string {
  if (!c.buckets) return '';
  const { bucketMs, values } = c.buckets;
  const from = atMs - c.windowMs;
  const peak = Math.max(...values.map(([, v]) => v), 0);
  const x = (ms: number) => Math.max(0, Math.min(COUNTER_W, ((ms - from) / c.windowMs) * COUNTER_W));
  const barW = Math.max(1, (bucketMs / c.windowMs) * COUNTER_W - 0.5);
  const bars = values
    .filter(([, v]) => v > 0)
    .map(([start, v]) => {
      const h = peak ? (v / peak) * COUNTER_H : 0;
      return `<rect class="bucket" fill="#4c78a8" x="${px(x(start))}" y="${px(COUNTER_H - h)}" width="${px(barW)}" height="${px(h)}" data-start="${e(new Date(start).toISOString())}" data-amount="${e(amount(v))}"><title>${e(`${hhmmss(start)} UTC, ${durationLabel(bucketMs)}: ${amount(v)}`)}</title></rect>`;
    })
    .join('');
  const share = c.limit > 0 ? c.value / c.limit : 1;
  const full = Math.min(1, share);
  const over = c.value >= c.limit;
  const label = `${c.name} (${c.scope === '*' ? 'fleet' : c.scope}) over the last ${durationLabel(c.windowMs)}: ${amount(c.value)} of ${amount(c.limit)}`;
  const H = COUNTER_H + GAUGE_H + 16;
  return `<svg class="chart" role="img" width="${COUNTER_W}" height="${H}" viewBox="0 0 ${COUNTER_W} ${H}" data-chart="counter" data-counter="${e(c.name)}|${e(c.scope)}" data-value="${e(amount(c.value))}" data-limit="${e(amount(c.limit))}"><title>${e(label)}</title>
<rect x="0" y="0" width="${COUNTER_W}" height="${COUNTER_H}" fill="#f6f6f6"/>${bars}
<rect x="0" y="${COUNTER_H + 3}" width="${COUNTER_W}" height="${GAUGE_H}" fill="#e4e4e4"/><rect class="gauge${over ? ' over' : ''}" x="0" y="${COUNTER_H + 3}" width="${px(full * COUNTER_W)}" height="${GAUGE_H}" fill="${over ? '#b3261e' : '#23733a'}"/>
<text x="0" y="${H - 1}" font-size="9" fill="#555">−${e(durationLabel(c.windowMs))}</text><text x="${COUNTER_W}" y="${H - 1}" font-size="9" fill="#555" text-anchor="end">now · ${e(Math.round(share * 100))}% of the limit</text></svg>`;
}

const STORM_W = 300;
const STORM_H = 70;

/**
 * One scope's wakes per calendar minute (the last one still filling) as bars, with the storm
 * threshold as a dashed line when the scope has one; a minute over it is red. The breaker counts a
 * sliding minute, so it can trip while no calendar minute is over the line; a bar over it did trip
 * it, unless the breaker was already halted.
 */
export function stormChart(scope: string, minutes: [number, number][], threshold: number | undefined): string {
  const peak = Math.max(threshold ?? 0, ...minutes.map(([, n]) => n), 1) * 1.15;
  const y = (n: number) => STORM_H - (n / peak) * STORM_H;
  const slot = STORM_W / Math.max(1, minutes.length);
  const bars = minutes
    .map(([start, n], i) => {
      const over = threshold !== undefined && n > threshold;
      return `<rect class="minute${over ? ' over' : ''}" x="${px(i * slot + 1)}" y="${px(y(n))}" width="${px(slot - 2)}" height="${px(STORM_H - y(n))}" fill="${over ? '#b3261e' : '#4c78a8'}" data-minute="${e(new Date(start).toISOString())}" data-wakes="${e(n)}"><title>${e(`${hhmm(start)} UTC: ${n} wakes${i === minutes.length - 1 ? ' so far' : ''}`)}</title></rect>`;
    })
    .join('');
  const line =
    threshold === undefined
      ? ''
      : `<line x1="0" x2="${STORM_W}" y1="${px(y(threshold))}" y2="${px(y(threshold))}" stroke="#b3261e" stroke-dasharray="4 3"/><text x="${STORM_W / 2}" y="${STORM_H + 13}" font-size="9" fill="#b3261e" text-anchor="middle">- - storm: over ${e(threshold)} a minute</text>`;
  const who = scope === '*' ? 'the fleet' : scope;
  const total = minutes.reduce((s, [, n]) => s + n, 0);
  const first = minutes[0]?.[0];
  const H = STORM_H + 14;
  return `<svg class="chart" role="img" width="${STORM_W}" height="${H}" viewBox="0 0 ${STORM_W} ${H}" data-chart="storm" data-scope="${e(scope)}"${threshold === undefined ? '' : ` data-threshold="${e(threshold)}"`} data-total="${e(total)}"><title>${e(`wakes of ${who} per minute, the last ${minutes.length} minutes: ${total} in all${threshold === undefined ? '' : `; the storm threshold is ${threshold} a minute`}`)}</title>
<rect x="0" y="0" width="${STORM_W}" height="${STORM_H}" fill="#f6f6f6"/>${bars}${line}
<text x="0" y="${H - 1}" font-size="9" fill="#555">${first === undefined ? '' : `${e(hhmm(first))} UTC`}</text><text x="${STORM_W}" y="${H - 1}" font-size="9" fill="#555" text-anchor="end">now</text></svg>`;
}
