import type { SeriesState } from '../../src/core/supervisor-types';

/**
 * Sliding-window counters for the supervisor: a series keeps buckets of `windowMs / 60` (at least
 * 250 ms), so a window slides in sixtieths rather than jumping at a calendar boundary, and a series
 * never holds more than about 61 buckets whatever its window. Pure: the supervisor workflow replays it.
 */
export function newSeries(windowMs: number): SeriesState {
  return { windowMs, bucketMs: Math.max(250, Math.ceil(windowMs / 60)), buckets: [] };
}

/** Add `n` at `atMs` (which may lie in the past: a run's close time); older than the window is dropped. */
export function addTo(s: SeriesState, atMs: number, n: number, nowMs: number): void {
  if (n === 0 || atMs <= nowMs - s.windowMs) return;
  const start = atMs - (atMs % s.bucketMs);
  const at = s.buckets.findIndex(([b]) => b === start);
  if (at >= 0) s.buckets[at]![1] += n;
  else {
    s.buckets.push([start, n]);
    s.buckets.sort((a, b) => a[0] - b[0]);
  }
  prune(s, nowMs);
}

/** The sum over the last `windowMs` (a bucket counts while any of it lies inside the window). */
export function sumOf(s: SeriesState | undefined, nowMs: number): number {
  if (!s) return 0;
  let sum = 0;
  for (const [start, v] of s.buckets) if (start + s.bucketMs > nowMs - s.windowMs) sum += v;
  return sum;
}

/** Drop buckets wholly outside the window. */
export function prune(s: SeriesState, nowMs: number): void {
  const keepFrom = s.buckets.findIndex(([start]) => start + s.bucketMs > nowMs - s.windowMs);
  if (keepFrom < 0) s.buckets.length = 0;
  else if (keepFrom > 0) s.buckets.splice(0, keepFrom);
}

/** When the window will have slid past everything counted now, epoch ms (for a held wake's re-check). */
export function nextSlideMs(s: SeriesState | undefined, nowMs: number): number | undefined {
  const first = s?.buckets.find(([start]) => start + s.bucketMs > nowMs - s.windowMs);
  return first && s ? first[0] + s.bucketMs + s.windowMs : undefined;
}

/**
 * Take back up to `n` of what was added at `atMs` (permits handed back unused); what has slid out,
 * or was never there, is not taken. Returns how many were taken.
 */
export function takeFrom(s: SeriesState | undefined, atMs: number, n: number, nowMs: number): number {
  if (!s || n <= 0) return 0;
  prune(s, nowMs);
  const start = atMs - (atMs % s.bucketMs);
  const bucket = s.buckets.find(([b]) => b === start);
  if (!bucket) return 0;
  const taken = Math.min(n, bucket[1]);
  bucket[1] -= taken;
  return taken;
}
