/** Why the gate refused an input before touching Temporal. `code` is stable for scripts. */
export type GateInputErrorCode =
  | 'invalid_event'
  | 'unknown_source'
  | 'unknown_event_type'
  | 'invalid_payload'
  | 'unknown_agent'
  | 'invalid_wake_key'
  /** Past the limits in `src/gate/limits.ts`: nesting depth, JSON size, occurredAt range. */
  | 'payload_too_deep'
  | 'payload_too_large'
  | 'occurred_at_out_of_range';

/** A bad event: the message names the field and the fix; nothing was started. */
export class GateInputError extends Error {
  override name = 'GateInputError';
  constructor(
    readonly code: GateInputErrorCode,
    message: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}
