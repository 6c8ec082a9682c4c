/** Percentile (nearest-rank) of a list of numbers; 0 for an empty list. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Run `task(i)` for i in [0, n) with at most `concurrency` in flight; returns each call's latency in ms. */
export async function runPool(n: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = new Array(n);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, n) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const t0 = performance.now();
      await task(i);
      latencies[i] = performance.now() - t0;
    }
  });
  await Promise.all(lanes);
  return latencies;
}

export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** A latency histogram: bin i counts the samples in [i × binMs, (i + 1) × binMs), from 0 up to the largest sample. */
export interface Histogram {
  binMs: number;
  counts: number[];
}

/** A "nice" bin width (1, 2 or 5 × 10^k ms) that puts `maxMs` in at most `maxBins` bins. */
function binWidth(maxMs: number, maxBins: number): number {
  const raw = Math.max(maxMs, 1e-9) / maxBins;
  const step = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * step).find((w) => w >= raw)!;
}

/**
 * Histograms of several series of latencies on one bin width, so their distributions can be drawn
 * side by side (tools/bench/charts.ts). The width is chosen from the largest sample of all of them.
 */
export function histograms<K extends string>(samples: Record<K, number[]>, maxBins = 40): Record<K, Histogram> {
  const all = Object.values<number[]>(samples).flat();
  const binMs = binWidth(
    all.reduce((m, x) => Math.max(m, x), 1),
    maxBins,
  );
  const out = {} as Record<K, Histogram>;
  for (const key of Object.keys(samples) as K[]) {
    const xs = samples[key];
    const counts: number[] = [];
    for (const x of xs) {
      const i = Math.floor(Math.max(0, x) / binMs); // a latency is never negative; a clock's jitter is put in the first bin
      while (counts.length <= i) counts.push(0);
      counts[i]!++;
    }
    out[key] = { binMs: round(binMs, 3), counts };
  }
  return out;
}

/** Median with linear interpolation between ranks (the median of an even count is the mean of the middle two); NaN for none. */
export function median(xs: ArrayLike<number>): number {
  return quantile(xs, 0.5);
}

/** Quantile with linear interpolation between ranks; NaN for none. */
export function quantile(xs: ArrayLike<number>, q: number): number {
  const s = Float64Array.from(xs).sort();
  if (s.length === 0) return NaN;
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (at - lo);
}

/** Min, quartiles and max of some values, rounded to three places: how much a short run would swing. */
export function spreadOf(xs: number[]): { min: number; q1: number; median: number; q3: number; max: number } {
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return { min: r3(Math.min(...xs)), q1: r3(quantile(xs, 0.25)), median: r3(quantile(xs, 0.5)), q3: r3(quantile(xs, 0.75)), max: r3(Math.max(...xs)) };
}

export const sum = (xs: number[]): number => xs.reduce((t, x) => t + x, 0);

/**
 * A paired block bootstrap of a ratio of statistics, stat(a) / stat(b) (the median unless told), where a and b were sampled
 * side by side in time: `blocks[i]` holds both samples' values from the i-th span of time. Each
 * resample draws whole blocks with replacement, the same draw for both samples, so a drift in the
 * machine's load (which moves a and b together within a span) stays inside each resample's pair
 * instead of widening the interval, and the dependence between nearby values is kept. Returns the
 * ratio over all values and the percentile interval of the resampled ratios at `level`.
 */
export function pairedBlockBootstrap(
  blocks: { a: number[]; b: number[] }[],
  opts: { resamples?: number; level?: number; random?: () => number; stat?: (xs: number[]) => number } = {},
): { ratio: number; lo: number; hi: number; level: number } {
  const { resamples = 2000, level = 0.95, random = Math.random, stat = median } = opts;
  const all = (k: 'a' | 'b', pick: number[]) => pick.flatMap((i) => blocks[i]![k]);
  const ratioOf = (pick: number[]) => stat(all('a', pick)) / stat(all('b', pick));
  const ratio = ratioOf(blocks.map((_, i) => i));
  const ratios: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const pick = blocks.map(() => Math.floor(random() * blocks.length));
    const x = ratioOf(pick);
    if (Number.isFinite(x)) ratios.push(x);
  }
  ratios.sort((x, y) => x - y);
  const at = (q: number) => ratios[Math.min(ratios.length - 1, Math.max(0, Math.round(q * (ratios.length - 1))))] ?? NaN;
  return { ratio, lo: at((1 - level) / 2), hi: at(1 - (1 - level) / 2), level };
}
