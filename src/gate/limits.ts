import { GateInputError } from './errors';

/**
 * What an event must keep to pass the gate, the same for every trigger (CLI, schedules, an HTTP
 * ingress): checked before anything walks the payload recursively (fingerprint, zod, JSON), so a
 * hostile or broken payload is refused with a clear error instead of exhausting the stack.
 */
export const EVENT_LIMITS = {
  /** Deepest nesting of objects and arrays in a payload; the payload object itself is depth 1. */
  maxPayloadDepth: 32,
  /** Largest payload as compact JSON, UTF-8 bytes (256 KiB). */
  maxPayloadBytes: 256 * 1024,
  /**
   * Most text an edge reads before parsing a payload, bytes: whitespace and escapes may shrink under
   * the limit once parsed, anything larger is refused unread.
   */
  maxPayloadTextBytes: 8 * 256 * 1024,
  /** How far in the future an event's `occurredAt` may lie (clock skew between producer and gate), ms. */
  clockSkewMs: 5 * 60_000,
  /** The earliest `occurredAt` accepted: anything before is a wrong clock or a wrong field, not an event. */
  earliestOccurredAt: '2000-01-01T00:00:00Z',
} as const;

/**
 * Whether `value` nests objects or arrays deeper than `maxDepth`. Iterative (an explicit stack), so
 * it cannot overflow the call stack however deep the value is, and it stops at the first container
 * past the limit; a cyclic value counts as too deep.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Refuse a payload past {@link EVENT_LIMITS}: too deep (`payload_too_deep`) or too large as compact
 * JSON (`payload_too_large`). Throws {@link GateInputError} naming the field, the limit and the size.
 */
export function checkPayloadLimits(payload: unknown, limits: Pick<typeof EVENT_LIMITS, 'maxPayloadDepth' | 'maxPayloadBytes'> = EVENT_LIMITS): void {
  if (nestsDeeperThan(payload, limits.maxPayloadDepth)) {
    throw new GateInputError('payload_too_deep', `payload nests objects or arrays deeper than ${limits.maxPayloadDepth} levels: flatten it`, [
      { path: 'payload', message: `deeper than ${limits.maxPayloadDepth} levels` },
    ]);
  }
  // Safe to serialise now: the depth is bounded.
  const bytes = Buffer.byteLength(JSON.stringify(payload) ?? '', 'utf8');
  if (bytes > limits.maxPayloadBytes) {
    throw new GateInputError(
      'payload_too_large',
      `payload is ${bytes} bytes as JSON, over the limit of ${limits.maxPayloadBytes} bytes: send a reference (a URL, an id) instead of the data`,
      [{ path: 'payload', message: `${bytes} bytes, limit ${limits.maxPayloadBytes}` }],
    );
  }
}

/**
 * Refuse an `occurredAt` (epoch ms) that lies more than the clock-skew tolerance after `nowMs`, or
 * before {@link EVENT_LIMITS.earliestOccurredAt}: code `occurred_at_out_of_range`, field `occurredAt`.
 */
export function checkOccurredAt(
  occurredMs: number,
  nowMs: number,
  limits: Pick<typeof EVENT_LIMITS, 'clockSkewMs' | 'earliestOccurredAt'> = EVENT_LIMITS,
): void {
  const latestMs = nowMs + limits.clockSkewMs;
  if (occurredMs > latestMs) {
    throw new GateInputError(
      'occurred_at_out_of_range',
      `occurredAt ${new Date(occurredMs).toISOString()} lies in the future (now ${new Date(nowMs).toISOString()}, clock-skew tolerance ${limits.clockSkewMs / 1000} s): send when the event happened`,
      [{ path: 'occurredAt', message: `more than ${limits.clockSkewMs / 1000} s in the future` }],
    );
  }
  if (occurredMs < Date.parse(limits.earliestOccurredAt)) {
    throw new GateInputError(
      'occurred_at_out_of_range',
      `occurredAt ${new Date(occurredMs).toISOString()} is before ${limits.earliestOccurredAt}: check the producer's clock and the field`,
      [{ path: 'occurredAt', message: `before ${limits.earliestOccurredAt}` }],
    );
  }
}

/** Both checks on a schema-valid event, at the gate's clock `nowMs`. Throws {@link GateInputError}. */
export function checkEventLimits(event: { occurredAt: string; payload: unknown }, nowMs: number = Date.now()): void {
  checkPayloadLimits(event.payload);
  checkOccurredAt(Date.parse(event.occurredAt), nowMs);
}
