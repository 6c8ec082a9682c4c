/**
 * What the supervisor (workflows/supervisor/) is asked and told: a person's halt, drain and release,
 * the wakes the gates admitted, the runs that closed, and the pages it sends. Plain JSON.
 */

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
}

/** A page to send (the pager adapter's own shape: src/supervisor/pager.ts). */
export interface PageRequest {
  dedupKey: string;
  summary: string;
  severity: 'critical' | 'error' | 'warning' | 'info';
  source: string;
  details: Record<string, unknown>;
}
