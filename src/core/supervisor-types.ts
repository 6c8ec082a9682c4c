/**
 * Wire types of the supervisor (workflows/supervisor/): its state, its memo and its status. Plain
 * JSON, shared by the workflow, the gate, the runs' first step, the CLI and the status page. By
 * topic, its policy is in supervisor-policy.ts, what it is asked and told in supervisor-requests.ts,
 * what it tells a run in supervisor-verdicts.ts; all are exported from here too.
 */
import type { SupervisorPolicy } from './supervisor-policy';
import type { PageRequest } from './supervisor-requests';

export type { SupervisorPolicy, WindowCap } from './supervisor-policy';
export type { HaltRequest, PageRequest, PersonAction, ReleaseRequest, RunClosure, RunObservation, WakeCounts, WatchRequest } from './supervisor-requests';
export type { HoldRecord, RunVerdict } from './supervisor-verdicts';

/** `armed`: runs start. `halted`: tripped or halted by a person; every wake is held. `draining`: as halted, but live runs finish. */
export type SupervisorMode = 'armed' | 'halted' | 'draining';

export type TripKind = 'storm' | 'error_rate' | 'halt' | 'drain';

export interface Trip {
  id: number;
  kind: TripKind;
  at: string;
  /** In words: what crossed which threshold, or who halted and why. */
  reason: string;
  /** A person's halt or drain. */
  by?: { who: string; reason: string };
  /** The counters when it tripped. */
  counters: Record<string, number>;
  /** The page sent for it (storm and error-rate trips page; a person's halt does not). */
  page?: PageOutcome;
}

export interface ResetRecord {
  tripId: number;
  who: string;
  reason: string;
  at: string;
}

/** A person's decision on held wakes: let them run, or drop them (they end `discarded`). */
export interface ReleaseRecord {
  id: number;
  action: 'release' | 'discard';
  /** Only this agent's held wakes; all when absent. */
  agent?: string;
  who: string;
  reason: string;
  at: string;
  /** Covers wakes held before this instant (epoch ms, workflow time). */
  atMs: number;
}

/** One counter against a cap or threshold, for status and pages. */
export interface CounterView {
  name: string;
  scope: string;
  windowMs: number;
  value: number;
  limit: number;
  rationale: string;
  /**
   * The sliding window behind `value`: its buckets of `bucketMs` that count now, oldest first, as
   * [bucket start epoch ms, amount]. In the status query's answer only (the `/supervisor` page
   * draws them); absent for the error rate, a share rather than a sum.
   */
  buckets?: { bucketMs: number; values: [number, number][] };
}

/** A wake held because a cap's window is full: since when, and which cap. */
export interface CapHold {
  scope: string;
  cap: string;
  sinceMs: number;
  paged?: { dedupKey: string; status: string } | Extract<PageOutcome, { error: string }>;
}

/**
 * What became of a page: delivered, or failed (its retries ran out or the pager refused it), with
 * when it is sent again (while its trip stands) and how many sends have failed so far.
 */
export type PageOutcome = { dedupKey: string; status: string; at: string; sends?: number } | { error: string; resendAt?: string; sends?: number };

/** A sliding-window series: buckets of `bucketMs` (start epoch ms, value). */
export interface SeriesState {
  windowMs: number;
  bucketMs: number;
  buckets: [number, number][];
}

export interface SupervisorState {
  mode: SupervisorMode;
  trip?: Trip;
  trips: Trip[];
  resets: ResetRecord[];
  releases: ReleaseRecord[];
  nextTripId: number;
  nextReleaseId: number;
  /** Named series (see workflows/supervisor/state.ts for the names). */
  series: Record<string, SeriesState>;
  /** Agents (or `*`, the fleet) whose cap refused a permit and has not granted one since. */
  capHolds: Record<string, CapHold>;
  nextCapEpisode: number;
  /** Runs closed up to here (epoch ms) have been counted. */
  observedToMs: number;
  /**
   * The last wake admitted, lease or person's release (epoch ms): runs may have started then. Kept
   * across continue-as-new so that a run continued as new does not count as activity (absent: the run
   * starts active, as a new supervisor does).
   */
  lastActivityMs?: number;
  /** The last watch of closed runs saw every run open by then (epoch ms): activity after it needs another watch. */
  watchedToMs?: number;
  /** The last watch was cut short (a failure, spend, its bound) with the burst not over: the next starts at once. */
  moreToRead?: boolean;
  /** Watches in a row that failed: each doubles the wait before the next, to a minute. */
  failedReads?: number;
  /** The last reset, epoch ms. */
  armedSinceMs?: number;
  /** When closed runs were last read (ISO). */
  lastObservedAt?: string;
  /**
   * The last visibility call that failed (reading closed runs, stopping or nudging runs): the
   * supervisor keeps going and retries at its next round, and status shows it. With `unavailable`,
   * the server has no visibility API (the time-skipping test server): the error-rate breaker and
   * spend caps are blind there, said once in the log and always in status.
   */
  visibilityError?: { at: string; message: string; unavailable?: boolean };
  /**
   * Stops of live runs to make again (kept across continue-as-new): one that failed (Temporal
   * briefly away), at a backoff, until it lands; and one sweep after a stop that did, for runs that
   * began just before the trip and were not yet listed by visibility. Dropped once the trip that
   * asked for them is reset.
   */
  stopsDue?: { dueMs: number; stop: StopRequest }[];
  /**
   * Pages to send again (kept across continue-as-new): one whose retries ran out or that the pager
   * refused, at a backoff, until it is delivered. Dropped once its trip is reset (or its cap hold
   * has ended).
   */
  pagesDue?: { dueMs: number; page: PageAction }[];
  /**
   * The last page per (agent, scope, cap), kept for that cap's window: a new episode of the same cap
   * within it is held and shown but not paged again (a steady load over a cap would otherwise page
   * at every slide of its window).
   */
  capPages?: Record<string, { atMs: number; dedupKey: string; windowMs: number }>;
  /**
   * Permits leased ahead of demand, per holder (a worker process's link): what it may still hand
   * back, until when (kept across continue-as-new). See src/core/permit-types.ts.
   */
  blocks?: Record<string, LeasedBlock[]>;
}

/** Permits leased to one holder ahead of demand: `n` still returnable, counted in the windows at `atMs`. */
export interface LeasedBlock {
  agent: string;
  atMs: number;
  n: number;
  /** After this (epoch ms, workflow time) the block is forgotten and its permits stay counted. */
  untilMs: number;
  /** Where its permits are counted in the windows: the end of its hold (absent: at `atMs`). */
  countedAtMs?: number;
}

/** A page to send for a trip or a cap hold, with the sends that failed before this one. */
export interface PageAction {
  page: PageRequest;
  tripId?: number;
  capAgent?: string;
  /** The (agent, scope, cap) it is about: its entry in `capPages`. */
  capKey?: string;
  /** Sends that failed so far (each one after the activity's own retries ran out). */
  failedSends?: number;
}

/** A stop of live runs (all of them, or of some agents) for the trip it was asked for. */
export interface StopRequest {
  agents?: string[];
  who: string;
  reason: string;
  tripId?: number;
  /** Failed tries so far. */
  attempt?: number;
  /** The one more pass after a stop that landed. */
  sweep?: boolean;
}

export interface SupervisorInput {
  taskQueue: string;
  policy: SupervisorPolicy;
  state?: SupervisorState;
}

/**
 * What the supervisor publishes in its memo, for every process to read with one `describe` (no
 * worker needed to answer, unlike a query): the mode, the trip, the agents over a cap and the recent
 * releases. The gate reads it cached; a run's first step re-reads it.
 */
export interface SupervisorMemo {
  mode: SupervisorMode;
  tripId?: number;
  tripReason?: string;
  /** Agents (or `*`) whose cap is full. */
  capsFull: string[];
  releases: ReleaseRecord[];
  /** When a person last reset the breaker (epoch ms): a wake held after it on a stale read needs no release. */
  armedSinceMs?: number;
  /** The policy the supervisor holds, hashed (`policyHash`): a worker bringing the same one sends no `configure`. */
  policyHash?: string;
  /** Until when a block it leased may still start runs without a word to it (epoch ms): its watch of closed runs stays until then. */
  leasedUntilMs?: number;
}

export interface SupervisorStatus {
  supervisorId: string;
  mode: SupervisorMode;
  trip?: Trip;
  trips: Trip[];
  resets: ResetRecord[];
  releases: ReleaseRecord[];
  counters: CounterView[];
  capHolds: Record<string, CapHold>;
  /** Runs closed in the error-rate window, by terminal reason, fleet-wide. */
  recentRuns: Record<string, number>;
  lastObservedAt?: string;
  visibilityError?: SupervisorState['visibilityError'];
  policy: SupervisorPolicy;
  /** When the status was read, epoch ms of workflow time: where the counters' windows end. In the status query's answer only. */
  atMs?: number;
  /**
   * Wakes that started a run at the gate (the storm breaker's count) per calendar minute over the last ten, fleet-wide (`*`) and per
   * agent, as [minute start epoch ms, wakes], oldest first, the current minute last (still
   * filling). In the status query's answer only. The storm breaker itself counts a sliding minute.
   */
  wakesPerMinute?: Record<string, [number, number][]>;
}
