import { canonicalJson } from './canonical-json';
import { hash64 } from './hash';
/**
 * The supervisor's policy (workflows/supervisor/): its breakers, caps and timings. Plain JSON, declared
 * in code (src/supervisor/policy.ts), read by the workflow, the gate, the runs' first step and the status page.
 */

/** A rolling cap over a sliding window: runs started (permits), spend in USD and in tokens. */
export interface WindowCap {
  /** The window slides: what counts is the last `windowMs`, not a calendar bucket. */
  windowMs: number;
  /** Runs started in the window (each run's first step takes one permit). */
  wakes?: number;
  /** Model spend of runs that closed in the window, USD. */
  costUsd?: number;
  /** Model tokens of runs that closed in the window. */
  tokens?: number;
  /** Why this number: what it protects against. */
  rationale: string;
}

/** What the supervisor enforces. Declared in code (src/supervisor/policy.ts), with a rationale per number. */
export interface SupervisorPolicy {
  /** The storm breaker: wakes arriving at the gate per sliding minute. Over it, the breaker trips. */
  storm: { fleetPerMinute: number; agentPerMinute?: number; rationale: string };
  /** The error-rate breaker: the share of recent runs that ended in one of `reasons`. */
  errorRate: {
    windowMs: number;
    minRuns: number;
    threshold: number;
    /** Terminal reasons (src/core/run-types.ts) that count as errors. */ reasons: string[];
    rationale: string;
  };
  /**
   * Per-period budgets: for the whole fleet, per agent, and for live shadow runs (the agents' `shadow`
   * option), which count against `shadow` only: never against the fleet's or an agent's, so a
   * shadow never holds a production run. A shadow over its cap is not held: it ends `discarded`.
   */
  caps: { fleet: WindowCap[]; agents: Record<string, WindowCap[]>; shadow?: WindowCap[] };
  /** Per agent: what a trip does to its live runs (`cancel`: stopped at their next step, nothing further committed). Default `finish`. */
  onTrip: Record<string, 'cancel' | 'finish'>;
  /** Per agent: a wake over its cap is `hold` (default: held until the window slides) or `refuse` (the gate refuses it; the sender retries). */
  overCap: Record<string, 'hold' | 'refuse'>;
  /** How often the supervisor reads the runs that closed (error rate, spend), ms. */
  observeEveryMs: number;
  /** A held run re-checks the supervisor at most this often (a release also nudges it at once), ms. */
  holdRecheckMs: number;
  /**
   * A page whose retries ran out, or that the pager refused, is sent again after this long (then
   * doubling, at most an hour) while what it is about still stands, ms. Default 5 min.
   */
  pageResendMs?: number;
}

/** A policy's fingerprint (its canonical JSON, hashed): the supervisor's memo carries it, so a worker bringing the same policy sends no `configure`. */
export function policyHash(policy: SupervisorPolicy): string {
  const [high, low] = hash64(canonicalJson(policy));
  return `${high.toString(16)}${low.toString(16).padStart(8, '0')}`;
}
