/** Why the gate refused an input before touching Temporal. `code` is stable for scripts. */
export type GateInputErrorCode = 'invalid_event' | 'unknown_source' | 'unknown_event_type' | 'invalid_payload' | 'unknown_agent' | 'invalid_wake_key';

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
