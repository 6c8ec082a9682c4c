import { capsFor } from './caps';
import { shadowedAgent } from './shadow';
import type { SupervisorPolicy } from './supervisor-policy';
import type { RunClosure, WatchRequest } from './supervisor-requests';

/*
 * When a watch of closed runs (WatchRequest) comes back before its burst is over: when what it has
 * read would change the supervisor's decision. Pure: the activity applies it after every read, and
 * test/unit/supervise-watch.test.ts proves it.
 */

/**
 * Why the closures read so far cut the watch short, if they do:
 * - `failure`: a run ended in an error-rate reason once `trip.runsToTrip` runs were read (fewer runs
 *   than the breaker's `minRuns` in its window can trip nothing; windows only slide, so the count at
 *   the watch's start is an upper bound);
 * - `spend`: the spend or tokens read reach a cap's room left at the watch's start (room only grows as
 *   windows slide, so this is never late).
 * A live shadow's outcome is not production's error rate; its spend counts against the shadow caps.
 */
export function watchCut(w: WatchRequest, closures: readonly RunClosure[]): 'failure' | 'spend' | undefined {
  if (w.trip) {
    let runs = 0;
    let failed = 0;
    for (const c of closures) {
      if (shadowedAgent(c.agent) !== undefined) continue;
      runs += 1;
      if (w.trip.reasons.includes(c.reason)) failed += 1;
      if (failed > 0 && runs >= w.trip.runsToTrip) return 'failure';
    }
  }
  if (w.spend) {
    const policy = { caps: w.spend.caps } as SupervisorPolicy;
    const spent: Record<string, number> = {};
    for (const c of closures) {
      for (const { scope, cap } of capsFor(policy, c.agent)) {
        for (const [what, n] of [
          ['usd', c.costUsd],
          ['tokens', c.tokens],
        ] as const) {
          const name = `${what}:${scope}:${cap.windowMs}`;
          const room = w.spend.rooms[name];
          if (room === undefined || !n) continue;
          spent[name] = (spent[name] ?? 0) + n;
          if (spent[name] >= room) return 'spend';
        }
      }
    }
  }
  return undefined;
}
