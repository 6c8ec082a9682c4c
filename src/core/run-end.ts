import type { RunEnded } from './coalesce-types';
import type { RunResult } from './run-types';

/**
 * A coalesced run's end as its coalescer takes it, from the run's result: its result carries all its
 * `runEnded` signal would (the steered events its model was given, those it never was in full, whether
 * it began committing). The coalescer that started it reads it from `child.result()`, its watch
 * (activities/coalescer/watch.ts) from Temporal: both learn the same facts a signal carries.
 */
export function runEndOf(runKey: string, r: RunResult): RunEnded {
  return {
    runKey,
    terminalReason: r.terminalReason,
    seen: r.steered ?? [],
    ...(r.unseenEvents?.length ? { unseenEvents: r.unseenEvents as RunEnded['unseenEvents'] } : {}),
    ...(r.commitBegan ? { commitBegan: true } : {}),
  };
}
