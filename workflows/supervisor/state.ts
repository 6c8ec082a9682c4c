import { supervisorId } from '../../src/core/ids';
import type { WatchRequest } from '../../src/core/supervisor-requests';
import { capsFor, FLEET } from '../../src/core/caps';
import type { LeaseRequest, UnusedPermits } from '../../src/core/permit-types';
import type {
  HaltRequest,
  PageAction,
  PersonAction,
  ReleaseRequest,
  RunObservation,
  SeriesState,
  StopRequest,
  SupervisorPolicy,
  SupervisorState,
  WindowCap,
} from '../../src/core/supervisor-types';
import { newSeries } from './sliding-window';

/**
 * The supervisor machine's state, inputs and actions, and the small helpers its rules share. Pure:
 * no Temporal import, no clock (every step is given `nowMs`), plain JSON throughout.
 *
 * Series names (`SupervisorState.series`), each a sliding window:
 * - `storm:*` and `storm:<agent>`: wakes that started a run at the gate, over a minute;
 * - `wakes:*` and `wakes:<agent>`: the same wakes over the last WAKE_HISTORY_MS, for status (per minute);
 * - `permits:<scope>:<windowMs>`, `usd:<scope>:<windowMs>`, `tokens:<scope>:<windowMs>`: a cap's runs
 *   started, spend and tokens (scope `*` is the fleet);
 * - `runs:<scope>`, `errors:<scope>`: closed runs and those that ended in an error-rate reason;
 * - `reason:<terminal reason>`: closed runs by reason, fleet-wide (for status).
 */

/** The scope of fleet-wide series and caps. */
export { FLEET };
/** Trips, resets and releases kept for status. */
export const KEPT = 20;
/** The storm breaker counts wakes over this window. */
export const STORM_WINDOW_MS = 60_000;
/** Status shows the wakes of this long, per minute, beside the storm threshold (buckets of 10 s). */
export const WAKE_HISTORY_MS = 10 * 60_000;
/** Runs read per observation; more are read on the next round. */
export const OBSERVE_LIMIT = 2000;
/** Runs closed in the last few seconds may not be in visibility yet: read up to this far behind. */
export const SETTLE_MS = 1000;
/** A stop of live runs is swept once more this long after it, for runs visibility had not listed yet. */
export const STOP_SWEEP_MS = 3000;
/** A failed stop is tried again after a backoff doubling up to this. */
export const MAX_STOP_RETRY_MS = 60_000;
/** A failed page is sent again after `policy.pageResendMs` (default this), doubling up to an hour. */
export const PAGE_RESEND_MS = 5 * 60_000;
export const MAX_PAGE_RESEND_MS = 60 * 60_000;

/** Everything the machine knows: what continues as new (`SupervisorState`) and what a new run starts afresh. */
export interface MachineState extends SupervisorState {
  taskQueue: string;
  policy: SupervisorPolicy;
  /** The last wake, lease or release seen (epoch ms): runs may have started then (`watchDue`). */
  lastActivityMs: number;
  /** When closed runs were last asked for (epoch ms): a failed watch waits before the next. */
  lastObserveAttemptMs: number;
  /** A watch of closed runs is in flight (its activity runs beside the other actions). */
  observing: boolean;
}

/**
 * A watch comes back (`settled`) once no run is open and none started or closed for this many
 * rounds (`observeEveryMs`), and not under MIN_WATCH_QUIET_MS: a coalescer's run starting after its
 * debounce, or the next of a schedule's windows, is seen within it.
 */
export const WATCH_QUIET_ROUNDS = 3;
export const MIN_WATCH_QUIET_MS = 5_000;
/**
 * A watch with runs open (held, awaiting a person, long) comes back once none started or closed for
 * this long, ms: the fleet is idle then, and a run closing later is read at the idle read (within
 * IDLE_OBSERVE_MS) or at once when the next wake, lease or release comes.
 */
export const ACTIVE_AFTER_MS = 60_000;
/** A watch comes back after this long at most, ms (and the next starts at once): a long stream's closed runs are counted at least this often. */
export const WATCH_MAX_MS = 120_000;
/** The longest wait after failed watches before the next, ms. */
export const MAX_FAILED_READ_WAIT_MS = 60_000;

/** Runs may have started at `atMs` (a wake admitted, a lease, a release): a watch that did not see that far is due (`watchDue`). */
export function sawActivity(m: MachineState, atMs: number): void {
  m.lastActivityMs = Math.max(m.lastActivityMs, atMs);
}

/** A visibility call that failed: the cause's own words, and whether the server has no visibility API at all. */
export interface VisibilityFailure {
  message: string;
  unavailable: boolean;
}

/** What the workflow does for the machine: through activities (page, stop, nudge, observe), or a log line. */
export type Action =
  | ({ kind: 'page' } & PageAction)
  | ({ kind: 'stop' } & StopRequest)
  | { kind: 'nudge'; agent?: string }
  | { kind: 'observe'; fromMs: number; limit: number; watch: WatchRequest }
  | { kind: 'log'; level: 'info' | 'warn' | 'error'; message: string; attrs: Record<string, unknown> };

/** What the machine is told: a message from outside, the loop's tick, or how an action it asked for went. */
export type Input =
  | { kind: 'wakes'; counts: Record<string, number>; lastAtMs?: number }
  | ({ kind: 'lease' } & LeaseRequest)
  /** A holder hands back prefetched permits it did not use. */
  | ({ kind: 'unused' } & UnusedPermits)
  | ({ kind: 'reset' } & PersonAction)
  | ({ kind: 'halt' } & HaltRequest)
  | ({ kind: 'release' } & ReleaseRequest)
  | { kind: 'configure'; policy: SupervisorPolicy }
  /** The loop came round: due stops and pages, an observation when its round is due, old series dropped. */
  | { kind: 'tick' }
  | { kind: 'paged'; page: PageAction; outcome: { dedupKey: string; status: string } | { error: string } }
  | { kind: 'stopped'; stop: StopRequest; failed?: VisibilityFailure }
  | { kind: 'nudged'; failed?: VisibilityFailure }
  /** A watch came back (`read`: what it read, how far, and why it came back) or failed. */
  | { kind: 'observed'; read?: RunObservation; failed?: VisibilityFailure }
  /** The workflow continues as new with these pages still being sent: the next run sends them again. */
  | { kind: 'continuing'; inFlight: PageAction[] };

/** One step in progress: the (copied) state it changes, its time, and the actions it asks for. */
export interface Turn {
  m: MachineState;
  nowMs: number;
  actions: Action[];
}

export const iso = (ms: number): string => new Date(ms).toISOString();
export const selfId = (m: MachineState): string => supervisorId(m.taskQueue);
export const log = (turn: Turn, level: 'info' | 'warn' | 'error', message: string, attrs: Record<string, unknown>): void => {
  turn.actions.push({ kind: 'log', level, message, attrs: { supervisorId: selfId(turn.m), ...attrs } });
};

/** Keep the last KEPT records. */
export const trim = <T>(records: T[]): void => {
  if (records.length > KEPT) records.splice(0, records.length - KEPT);
};

/** The named series, made (or made anew, when its window changed) on first use. */
export function seriesOf(m: MachineState, name: string, windowMs: number): SeriesState {
  const s = m.series[name];
  if (s && s.windowMs === windowMs) return s;
  return (m.series[name] = newSeries(windowMs));
}

/** Every cap that applies to an agent's runs (src/core/caps.ts): the fleet's and its own, or a live shadow's. */
export const capsOf = capsFor;

export const capSeriesName = (scope: string, cap: WindowCap, what: 'permits' | 'usd' | 'tokens'): string => `${what}:${scope}:${cap.windowMs}`;
export const capSeries = (m: MachineState, scope: string, cap: WindowCap, what: 'permits' | 'usd' | 'tokens'): SeriesState =>
  seriesOf(m, capSeriesName(scope, cap, what), cap.windowMs);

/** A cap in words: "2 wakes, $5 per 60 s". */
export const capName = (c: WindowCap): string =>
  [c.wakes !== undefined && `${c.wakes} wakes`, c.costUsd !== undefined && `$${c.costUsd}`, c.tokens !== undefined && `${c.tokens} tokens`]
    .filter(Boolean)
    .join(', ') + ` per ${c.windowMs / 1000} s`;

/** The breaker watches for storms and error rates while armed, and while a person's drain lets live runs finish. */
export const breakerWatches = (m: MachineState): boolean => m.mode === 'armed' || m.mode === 'draining';
