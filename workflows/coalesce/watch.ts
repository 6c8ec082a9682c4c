import type { RunEnded } from '../../core/coalesce-types';

/**
 * How often the coalescer looks at its live run through Temporal: often while a batch waits for the
 * run's end, seldom when nothing does (then only its own close waits on it).
 */
export const RUN_WATCH_WAITING_MS = 10_000;
export const RUN_WATCH_IDLE_MS = 120_000;

/**
 * The coalescer's watch of its live run through Temporal (activity `runEnd`): a run terminated by
 * hand sends no end, nor does one this execution did not start (after a continue-as-new or an
 * adoption) reach it by `child.result()`. A look is never awaited by the coalescer's loop, so a slow
 * or failing one holds no start, steer or close; its answer comes back through `ended`, and `changed`
 * wakes the loop. A look lost to a continue-as-new is taken again by the next execution.
 */
export class RunWatch {
  private watched: { runKey: string; sinceMs: number } | undefined;

  constructor(
    private readonly lookUp: (runKey: string) => Promise<RunEnded | null>,
    private readonly ended: (end: RunEnded) => void,
    private readonly changed: () => void,
  ) {}

  /**
   * When the live run `runKey` is next looked at (undefined: no live run). Looks at it now, not
   * awaited, when that time has come.
   */
  due(runKey: string | undefined, waiting: boolean, nowMs: number): number | undefined {
    if (!runKey) return (this.watched = undefined);
    if (this.watched?.runKey !== runKey) this.watched = { runKey, sinceMs: nowMs };
    const dueMs = this.watched.sinceMs + (waiting ? RUN_WATCH_WAITING_MS : RUN_WATCH_IDLE_MS);
    if (nowMs < dueMs) return dueMs;
    this.watched.sinceMs = nowMs;
    void this.lookUp(runKey)
      .then(
        (end) => end && this.ended(end),
        () => undefined,
      )
      .finally(this.changed);
    return nowMs + (waiting ? RUN_WATCH_WAITING_MS : RUN_WATCH_IDLE_MS);
  }

  /** Look at `runKey` at the next turn of the loop: something said it may have ended (a signal to it failed). */
  soon(runKey: string): void {
    if (this.watched?.runKey === runKey) this.watched.sinceMs = -Infinity;
  }
}
