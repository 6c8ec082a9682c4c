import type { RunResult } from './run-types';

/**
 * What the gate answered for one delivery, per agent the event wakes.
 * - `started`: this delivery started the agent's run for the event (one-call path), or opened a new
 *   batch whose run starts once the debounce allows (coalescing path; `runState: 'pending'`).
 * - `coalesced`: absorbed into a run that has not started yet (debouncing, or the follow-up of a live
 *   run); `runKey` names it.
 * - `skipped`: a run about the same wake key is live and the agent's policy is `skip`: recorded on
 *   that run (`runKey`), nothing more runs.
 * - `steered`: a run about the same wake key is live and the agent's policy is `steer`: the event is
 *   sent into that run (`runKey`, `runState: 'running'`), whose model sees it before its next
 *   turn; had the run begun committing, it waits for the follow-up run instead.
 * - `in_progress`: a delivery of an event already taken; its run is pending or open; the delivery id is recorded.
 * - `completed`: the run that took this event has finished; its stored result is returned, nothing runs.
 * - `stale`: the event's version is older than the newest seen for its wake key: recorded, nothing runs.
 * - `accepted`: durably taken by its coalescer, but no worker has decided it yet (the answer would
 *   have kept the caller waiting); it will be decided as soon as a worker polls.
 * - `mismatch`: the event key was used with different inputs (fingerprint); refused, nothing started.
 * - `held`: the run was started (durably, deduplicated as ever) while the supervisor is halted: it
 *   waits before its first step until a person releases it (`held` says why).
 * - `refused`: the agent is over a rolling cap and its supervisor policy is `refuse`: nothing was
 *   started; send it again later (HTTP 429 with Retry-After; the queue redelivers it).
 */
export type Decision = 'started' | 'coalesced' | 'skipped' | 'steered' | 'in_progress' | 'completed' | 'stale' | 'accepted' | 'mismatch' | 'held' | 'refused';

/** One agent's answer. */
export interface WakeAnswer {
  decision: Decision;
  agent: string;
  /** What the wake is about, for this agent. */
  wakeKey: string;
  /**
   * The run key of the run that took (or, for `skipped`, was told of) the event: follow it for the
   * result. For `accepted` (no run known yet), its coalescer's ID.
   */
  runKey: string;
  runId?: string;
  /** Coalescing path: the coalescer of (agent, wake key), which decided the event and remembers it. */
  coalescerId?: string;
  /** For a run that has not started yet: `pending`; a live one: `running`. */
  runState?: 'pending' | 'running';
  /** For a pending run: ms until the debounce lets it start (0: it waits for a live run to end). */
  startsInMs?: number;
  /** For `stale`: the newest version seen from the source. */
  newestVersion?: number;
  /** For a redelivery: what the first delivery was answered. */
  original?: Decision;
  /** The stored result, for `completed`. */
  result?: RunResult;
  /** For `mismatch`, `refused` (and a failed run): why, in words. */
  message?: string;
  /** Coalescing path: events its coalescer's dedup table let go before their horizon, when any (ingress `/metrics`). */
  forgottenEarly?: number;
  /** Admitted while the supervisor was halted or draining: the new run waits before its first step. */
  held?: { mode: string; tripId?: number; reason: string };
}

/**
 * The gate's answer to one delivery: the event's key and fingerprint, one answer per agent it wakes
 * (`wakes`), and, at the top level, the first agent's answer (most sources wake one agent), with the
 * decision a refusal when any agent refused.
 */
export interface GateAnswer extends WakeAnswer {
  eventKey: string;
  fingerprint: string;
  deliveryId?: string;
  wakes: WakeAnswer[];
}

/** Decisions that refuse the delivery: the CLI exits non-zero, an HTTP ingress answers 4xx. */
export function isRefusal(decision: Decision): boolean {
  return decision === 'mismatch' || decision === 'refused';
}

/** Decisions after which no new work exists for the event: nothing to wait for. */
export function isSettled(answer: WakeAnswer): boolean {
  return answer.decision === 'stale' || answer.decision === 'mismatch' || answer.decision === 'completed';
}
