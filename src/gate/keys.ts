import type { EventKeyParts } from '../core/ids';

export { effectKey, eventKey, type EffectKey, type EventKeyParts } from '../core/ids';

/**
 * The two keys the gate derives from every event, kept apart everywhere:
 *
 * - the event key: what *happened* (source, event type, entity, time bucket of the event's own time).
 *   Deduplication goes by it: the same event twice is one decision, reuse with other inputs is a
 *   mismatch. It names the workflow that records one agent's handling of it (src/core/ids.ts).
 * - the wake key: what a wake of one agent is *about* (a campaign, `repo:package`), declared by the agent
 *   and derived from any trigger's event. Coalescing goes by it, per agent.
 *
 * Neither is ever derived from a delivery id, a delivery time or an attempt number: all three change
 * on redelivery, and a key built from them would deduplicate nothing. Run IDs and effect keys are
 * built from these in src/core/ids.ts.
 */

/** Start of the UTC bucket that holds `occurredAtMs`, aligned to the Unix epoch. */
export function bucketStartMs(occurredAtMs: number, bucketMs: number): number {
  if (!Number.isFinite(occurredAtMs)) throw new RangeError('occurredAt is not a valid time');
  if (!Number.isInteger(bucketMs) || bucketMs < 1000) throw new RangeError(`bucket must be a whole number of ms >= 1000, got ${bucketMs}`);
  return Math.floor(occurredAtMs / bucketMs) * bucketMs;
}

/** Split an event key back into its parts (for display and for the CLI's `kill <event key>`). */
export function parseEventKey(key: string): EventKeyParts | undefined {
  const bits = key.split('/');
  if (bits.length !== 4) return undefined;
  const [source, type, entity, bucket] = bits.map((b) => decodeURIComponent(b)) as [string, string, string, string];
  const ms = Date.parse(bucket);
  if (!Number.isFinite(ms)) return undefined;
  return { source, type, entity, bucketStartMs: ms };
}

/**
 * Check a wake key an agent derived: printable, at most 200 characters. Returns the problem, or
 * undefined when it is fine (the gate refuses the event naming the agent).
 */
export function wakeKeyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string' || key.length === 0) return 'the wake key is empty';
  if (key.length > 200) return 'the wake key is longer than 200 characters';
  if ([...key].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return 'the wake key contains control characters';
  if (key === 'undefined' || key === 'null') return `the wake key is "${key}": the field it is derived from is missing`;
  return undefined;
}
