/** Plain-JSON types shared by the gate, the wake workflow and its callers. */

/**
 * How a run ended. Recorded on the run (search attribute WakeTerminalReason and the result).
 * `failed` is for defects; every other reason is a deliberate outcome.
 */
export const TERMINAL_REASONS = ['success', 'no_op', 'budget_exhausted', 'blocked', 'escalated', 'cancelled', 'failed'] as const;
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

/** The wake workflow's input: one logical event, as the gate admitted it. */
export interface WakeInput {
  eventKey: string;
  source: string;
  entity: string;
  type: string;
  /** When the event happened, ISO-8601 UTC. */
  occurredAt: string;
  /** Start of the key's time bucket, ISO-8601 UTC. */
  bucketStart: string;
  agent: string;
  payload: Record<string, unknown>;
  /** sha256 over the trigger's fingerprint fields; a redelivery with another fingerprint is refused. */
  fingerprint: string;
  /** The delivery that started the run (tracing only). */
  deliveryId?: string;
}

/** Redeliveries of the same logical event (one or a batch), recorded on the open run for tracing. */
export interface DeliveryNotice {
  deliveryIds: string[];
}

/** What a finished wake returns; the gate hands it to later deliveries of the same event. */
export interface WakeResult {
  eventKey: string;
  agent: string;
  terminalReason: TerminalReason;
  /** One line a person can read. */
  summary: string;
  /** Every delivery id seen while the run was open, first one first. */
  deliveryIds: string[];
  deliveryCount: number;
  /** Agent-specific output. */
  output?: unknown;
}

/** What the `status` query answers while a run is open. */
export interface WakeStatus {
  eventKey: string;
  agent: string;
  phase: string;
  deliveryIds: string[];
  deliveryCount: number;
}
