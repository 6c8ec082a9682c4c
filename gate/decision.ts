import type { WakeResult } from '../workflows/types';

/**
 * What the gate answered for one delivery.
 * - `started`: this delivery started the run for its event key.
 * - `in_progress`: a run for the key is open; no second run; the delivery id is recorded on it.
 * - `completed`: a run for the key already finished; its stored result is returned, nothing runs.
 * - `mismatch`: the key was used with different inputs (fingerprint); refused, nothing started.
 */
export type Decision = 'started' | 'in_progress' | 'completed' | 'mismatch';

export interface GateAnswer {
  decision: Decision;
  eventKey: string;
  workflowId: string;
  runId?: string;
  /** The stored result, for `completed`. */
  result?: WakeResult;
  fingerprint: string;
  deliveryId?: string;
  /** For `mismatch`: why, in words. */
  message?: string;
}

/** Decisions that refuse the delivery: the CLI exits non-zero, an HTTP ingress answers 4xx. */
export function isRefusal(decision: Decision): boolean {
  return decision === 'mismatch';
}
