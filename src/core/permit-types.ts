import type { SupervisorMode } from './supervisor-types';

/*
 * Permits on the wire between a worker process's link (src/supervisor/link.ts) and the supervisor
 * (workflows/supervisor/caps.ts). A run takes its permit from the link's local stock; the link asks
 * the supervisor by a `lease` update only when the stock is short, for the runs waiting plus a
 * prefetch, and hands back what it did not use (`unusedPermits` signal).
 */

/** Permits asked for by the runs' first steps of one worker process, per agent, in one block. */
export interface LeaseRequest {
  /** Runs waiting now, per agent: granted first, and a shortfall holds them (a cap hold, paged). */
  requests: Record<string, number>;
  /**
   * Permits wanted ahead of demand, per agent: granted only from what is left once `requests` are,
   * at most a quarter of the tightest cap's remaining room (so holders never starve each other)
   * and never more than MAX_PREFETCH; a shortfall holds nothing.
   */
  prefetch?: Record<string, number>;
  /** Who holds the prefetched permits (the link's process id): only it can hand them back. */
  holder?: string;
  /** How long the holder keeps prefetched permits before it hands back what is unused, ms. */
  holdMs?: number;
}

export interface LeaseAnswer {
  grants: Record<string, number>;
  mode: SupervisorMode;
  /**
   * For an agent not granted every permit it asked for: in how many ms its full cap's window next
   * slides past something it counts (the soonest a permit can free up). A held run re-checks then,
   * not every `holdRecheckMs`, so a long cap hold adds little to its history.
   */
  retryAfterMs?: Record<string, number>;
  /** Permits granted ahead of demand, per agent (absent: none). */
  prefetched?: Record<string, number>;
  /** When the permits were counted (workflow time, epoch ms): what a return names. */
  atMs?: number;
}

/** Prefetched permits a holder did not use, handed back in one block. */
export interface UnusedPermits {
  holder: string;
  blocks: { agent: string; atMs: number; n: number }[];
}

/** The most permits one lease grants ahead of demand, per agent. */
export const MAX_PREFETCH = 64;
/**
 * The longest a holder may keep prefetched permits, ms (a longer `holdMs` is cut to this; the link
 * also keeps it within a twentieth of the shortest cap window). A block is counted at the end of its
 * hold, so a longer hold over-counts a window by at most the hold, never under-counts it.
 */
export const MAX_HOLD_MS = 60_000;
