import type { Decision } from '../core/decision';
import type { SupervisorPolicy } from '../core/supervisor-types';

/** A process admitting at least this share of a storm threshold in a minute sends its wake counts every `flushMs`. */
export const BRISK_SHARE = 1 / 20;
/** Below it, counts wait at most this long before they are sent, ms. */
export const QUIET_FLUSH_MS = 10_000;
const MINUTE_MS = 60_000;

/**
 * Whether a wake the gate answered counts toward the storm breaker: it started a run (one-call; `held`
 * when the supervisor is halted), or opened a batch whose run starts (coalescing), or its coalescer
 * has not decided it yet (`accepted`: it may open one). An event that joins a pending batch
 * (`coalesced`), a redelivery (`in_progress`, `completed`), and an event a live run was told of
 * (`skipped`, `steered`) or that nothing took (`stale`, `mismatch`, `refused`) start nothing: a burst
 * on one wake key is its coalescer's to absorb, and a trip, which holds runs, would hold none of
 * theirs. The gate counts a wake when its answer is in.
 */
export function startsRun(decision: Decision): boolean {
  return decision === 'started' || decision === 'held' || decision === 'accepted';
}

/**
 * The storm wakes (`startsRun`) one process admitted in the last minute, per agent, and how soon its
 * next count must go to the supervisor. The storm breaker needs counts fresh only when a storm may be coming: a process
 * that admits a twentieth of a threshold in a minute sends them every `flushMs` (a quarter second);
 * a quieter one every QUIET_FLUSH_MS, so a fleet waking now and then pays one signal per ten seconds
 * of wakes, not one per wake. A storm spread over more than twenty processes, each below its
 * twentieth, trips that much later.
 */
export class WakeTally {
  /** Wake times (epoch ms) in the last minute, per agent, oldest first. */
  private readonly recent = new Map<string, number[]>();

  constructor(private readonly opts: { storm: SupervisorPolicy['storm']; flushMs: number }) {}

  /** One wake of `agent` admitted at `nowMs`. */
  note(agent: string, nowMs: number): void {
    const times = this.recent.get(agent) ?? [];
    times.push(nowMs);
    this.recent.set(agent, times);
  }

  /** How long counts noted now may wait before they are sent, ms. */
  delayMs(nowMs: number): number {
    let fleet = 0;
    let brisk = false;
    const { fleetPerMinute, agentPerMinute } = this.opts.storm;
    for (const [agent, times] of this.recent) {
      while (times.length && times[0]! <= nowMs - MINUTE_MS) times.shift();
      if (!times.length) this.recent.delete(agent);
      fleet += times.length;
      if (agentPerMinute !== undefined && times.length >= agentPerMinute * BRISK_SHARE) brisk = true;
    }
    return brisk || fleet >= fleetPerMinute * BRISK_SHARE ? this.opts.flushMs : Math.max(this.opts.flushMs, QUIET_FLUSH_MS);
  }
}
