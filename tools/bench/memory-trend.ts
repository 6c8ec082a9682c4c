/** One reading of a process's resident set: seconds into the measure, MB. */
export interface RssSample {
  s: number;
  mb: number;
}

/** A process's RSS over a long measure, and whether it stayed flat once warm. */
export interface RssTrend {
  /** RSS at the first reading after the warm-up. */
  warmMb: number;
  endMb: number;
  maxMb: number;
  /** The least-squares slope of RSS over the readings after the warm-up, MB per hour. */
  slopeMbPerHour: number;
  /** Readings after the warm-up (the slope's). */
  readings: number;
  flat: boolean;
}

/** What "flat" means for bench:memory: a process's RSS grows by at most this much an hour once warm. */
export const FLAT_MB_PER_HOUR = 20;

/**
 * The trend of one process's RSS. The warm-up (the first `warmFraction` of the measure: the workflow
 * cache filling, the JIT, the connections' buffers) is left out; over the rest, the least-squares line
 * through the readings gives the growth rate. One rate rather than end minus start: a single reading
 * taken in a garbage collector's high tide says nothing about a leak, a rate over hundreds does.
 */
export function rssTrend(samples: readonly RssSample[], seconds: number, warmFraction = 1 / 3): RssTrend {
  if (!samples.length) throw new Error('no RSS readings');
  const after = samples.filter((x) => x.s >= seconds * warmFraction);
  const used = after.length >= 2 ? after : samples;
  const n = used.length;
  const meanS = used.reduce((a, x) => a + x.s, 0) / n;
  const meanMb = used.reduce((a, x) => a + x.mb, 0) / n;
  const sxx = used.reduce((a, x) => a + (x.s - meanS) ** 2, 0);
  const sxy = used.reduce((a, x) => a + (x.s - meanS) * (x.mb - meanMb), 0);
  const slopePerS = sxx > 0 ? sxy / sxx : 0;
  const slopeMbPerHour = Math.round(slopePerS * 3600 * 10) / 10;
  return {
    warmMb: used[0]!.mb,
    endMb: samples.at(-1)!.mb,
    maxMb: Math.max(...samples.map((x) => x.mb)),
    slopeMbPerHour,
    readings: n,
    flat: slopeMbPerHour <= FLAT_MB_PER_HOUR,
  };
}
