import type { RunEnded } from '../../src/core/coalesce-types';

/** A run the watch looks at, as the coalescer's state holds it: the look's clock is carried there. */
interface Watched {
  runKey: string;
  startedAtMs: number;
  lookedAtMs?: number;
  steered?: string[];
  restartKeys?: string[];
}

/**
 * How often the coalescer looks at its live run through Temporal: often while a batch waits for the
 * run's end, seldom when nothing does (then only its own close waits on it).
 */
export const RUN_WATCH_WAITING_MS = 10_000;
export const RUN_WATCH_IDLE_MS = 120_000;

/**
 * The coalescer's watch of its live run, and of its foreign runs (live runs of a chain terminated by
 * hand, adopted while this chain had its own), through Temporal (activity `runEnd`): a run terminated
 * by hand sends no end, nor does one this execution did not start (after a continue-as-new or an
 * adoption) reach it by `child.result()`; a foreign run asked to report its end and then terminated by
 * hand would leave the steered events it held, unseen by its model, to no run. A look is never
 * awaited by the coalescer's loop, so a slow or failing one holds no start, steer or close; its answer
 * comes back through `ended`, and `changed` wakes the loop. A look lost to a continue-as-new is taken
 * again by the next execution.
 */
export class RunWatch {
  /**
   * Runs this execution started and follows by `child.result()`: Temporal tells it of their end, by
   * hand or not (a run terminated by hand closes as a child too), so they are not looked at. At
   * 20,000 new keys, each coalescer looking at its run every 2 min while runs queued behind them
   * outran a 2-core worker and no run finished (bench:coalesce).
   */
  private readonly followed = new Set<string>();

  constructor(
    private readonly lookUp: (runKey: string) => Promise<RunEnded | null>,
    private readonly ended: (end: RunEnded) => void,
    private readonly changed: () => void,
  ) {}

  /**
   * When a watched run is next looked at (undefined: none to look at). Looks at each now, not awaited,
   * when its time has come. The clock is the run's own `lookedAtMs` (from its start until the first
   * look), carried in the coalescer's state: a hot coalescer continues as new every few seconds, and
   * a clock that restarted with each execution would never reach a look. A foreign run is looked at
   * as often as a live run a batch waits for while it holds steered events or restart events wait in
   * the pending batch (they wait for its end).
   */
  due(running: Watched | undefined, waiting: boolean, nowMs: number, foreign: Watched[] = []): number | undefined {
    const dues = [this.dueOne(running, waiting, nowMs), ...foreign.map((f) => this.dueOne(f, Boolean(f.steered?.length || f.restartKeys?.length), nowMs))];
    const next = Math.min(...dues.map((d) => d ?? Infinity));
    return next === Infinity ? undefined : next;
  }

  private dueOne(running: Watched | undefined, waiting: boolean, nowMs: number): number | undefined {
    if (!running || this.followed.has(running.runKey)) return undefined;
    const every = waiting ? RUN_WATCH_WAITING_MS : RUN_WATCH_IDLE_MS;
    const dueMs = (running.lookedAtMs ?? running.startedAtMs) + every;
    if (nowMs < dueMs) return dueMs;
    running.lookedAtMs = nowMs;
    const { runKey } = running;
    void this.lookUp(runKey)
      .then(
        (end) => end && this.ended(end),
        () => undefined,
      )
      .finally(this.changed);
    return nowMs + every;
  }

  /** A run this execution started: its end comes by `child.result()`, so it is not looked at unless {@link soon} asks. */
  follow(runKey: string): void {
    this.followed.add(runKey);
  }

  /** Look at the live run at the next turn of the loop: something said it may have ended (a signal or a steer to it failed). */
  soon(running: { runKey: string; lookedAtMs?: number; startedAtMs: number } | undefined, runKey: string): void {
    this.followed.delete(runKey);
    if (running?.runKey === runKey) running.lookedAtMs = running.startedAtMs - RUN_WATCH_IDLE_MS;
  }
}
