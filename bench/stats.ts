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
