/**
 * What the supervisor (workflows/supervisor/) is asked and told: a person's halt, drain and release,
 * the wakes the gates admitted, the runs that closed, and the pages it sends. Plain JSON.
 */
import type { SupervisorPolicy } from './supervisor-policy';

/** A person's action: who and why, both required. */
export interface PersonAction {
  who: string;
  reason: string;
}

export interface HaltRequest extends PersonAction {
  /** `drain`: live runs finish; `halt`: live runs are cancelled. */
  drain: boolean;
}

export interface ReleaseRequest extends PersonAction {
  action: 'release' | 'discard';
  agent?: string;
}

/** Gate processes report the wakes they admitted, per agent, counted together per interval. */
export interface WakeCounts {
  counts: Record<string, number>;
  /** When the newest of these wakes was admitted (the sender's clock, epoch ms): its run was open from then. */
  lastAtMs?: number;
}

/** One run that closed: its agent, terminal reason and spend (from its search attributes). */
export interface RunClosure {
  agent: string;
  reason: string;
  closeMs: number;
  costUsd: number;
  tokens: number;
}

/** The runs that closed in (fromMs, toMs], oldest first; `truncated`: more remain, read on from the last one's close time. */
export interface RunObservation {
  closures: RunClosure[];
  truncated: boolean;
  /** A watch's answer: closed runs were read up to here (epoch ms). */
  toMs?: number;
  /** A watch's answer: a run open by then (epoch ms) was seen open or closed by the watch. */
  coveredToMs?: number;
  /** A watch's answer: it came back because the burst is over (no run open, or none started or closed for `activeMs`), not cut short. */
  settled?: boolean;
  /** A watch's answer: why it was cut short (`failure`, `spend`, `limit`, `bound`). */
  cut?: string;
}

/**
 * One watch of the runs of a task queue (activities/supervisor/supervise.ts): closed runs read from
 * visibility every `everyMs` within one activity, until the burst is over or a read would change the
 * supervisor's decision (./supervisor-watch.ts). Visibility calls are not billable; the activity is one action.
 */
export interface WatchRequest {
  /** Between two reads, ms. */
  everyMs: number;
  /** Back once no run is open and none started or closed for this long, ms (and not before `quietUntilMs`). */
  quietMs: number;
  /** Back once no run started or closed for this long though some are open (held, awaiting approval), ms. */
  activeMs: number;
  /** Back after this long at most, ms: a long stream of runs is read at least this often. */
  maxMs: number;
  /** Runs may start without telling the supervisor until then (a leased block's hold), epoch ms. */
  quietUntilMs: number;
  /** Back at the first failed run (an error-rate reason) once `runsToTrip` runs were read: the error rate could trip. */
  trip?: { reasons: string[]; runsToTrip: number };
  /** Back once the spend read reaches a cap's room left (by series name, `usd:<scope>:<windowMs>`, `tokens:…`). */
  spend?: { caps: SupervisorPolicy['caps']; rooms: Record<string, number> };
}

/** A page to send (the pager adapter's own shape: src/supervisor/pager.ts). */
export interface PageRequest {
  dedupKey: string;
  summary: string;
  severity: 'critical' | 'error' | 'warning' | 'info';
  source: string;
  details: Record<string, unknown>;
}
