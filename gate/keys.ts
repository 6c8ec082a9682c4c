/**
 * The stable identifiers of wakegate, built in this one place. Pure: imported by the gate and by
 * workflow code alike.
 *
 * - EventKey: the logical event (source, event type, entity, time bucket of the event's own time).
 *   It is the wake's workflow ID, so Temporal itself refuses a second open run for it.
 * - EffectKey: one external side effect of the run for that event (event key, effect name, step);
 *   the provider's idempotency key and the reconciliation look-up key.
 *
 * Neither is ever derived from a delivery id, a delivery time or an attempt number: all three change
 * on redelivery, and a key built from them would deduplicate nothing.
 */
export type EventKey = string & { readonly __brand: 'EventKey' };
export type EffectKey = string & { readonly __brand: 'EffectKey' };

/** Escape the separator so that distinct components never collide ("a/b" + "c" vs "a" + "b/c"). */
function component(s: string): string {
  return s.replace(/%/g, '%25').replace(/\//g, '%2F');
}

/** Start of the UTC bucket that holds `occurredAtMs`, aligned to the Unix epoch. */
export function bucketStartMs(occurredAtMs: number, bucketMs: number): number {
  if (!Number.isFinite(occurredAtMs)) throw new RangeError('occurredAt is not a valid time');
  if (!Number.isInteger(bucketMs) || bucketMs < 1000) throw new RangeError(`bucket must be a whole number of ms >= 1000, got ${bucketMs}`);
  return Math.floor(occurredAtMs / bucketMs) * bucketMs;
}

/** ISO-8601 UTC, second precision: `2026-12-02T14:00:00Z`. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface EventKeyParts {
  source: string;
  type: string;
  entity: string;
  /** Start of the time bucket, epoch ms (UTC). */
  bucketStartMs: number;
}

/**
 * `source/type/entity/bucketStart`, e.g. `github/pull_request.opened/acme%2Fweb/2026-12-02T14:00:00Z`:
 * readable in the Web UI, with entity and type visible.
 */
export function eventKey(parts: EventKeyParts): EventKey {
  return [component(parts.source), component(parts.type), component(parts.entity), isoSeconds(parts.bucketStartMs)].join(
    '/',
  ) as EventKey;
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
 * `eventKey#effect@step`: stable across activity retries, worker crashes and workflow replays,
 * because every part is (never an attempt number or a random id).
 */
export function effectKey(key: EventKey | string, effect: string, step: number | string): EffectKey {
  return `${key}#${effect}@${step}` as EffectKey;
}
