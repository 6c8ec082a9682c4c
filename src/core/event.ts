import { z } from 'zod';
import { Name } from './parse';

// Anything printable except "/" would do for keys (the key escapes "/"); control characters and
// surrounding whitespace are refused because they make keys unreadable in the Web UI and logs.
const KeyText = (what: string, max: number) =>
  z
    .string()
    .min(1, `${what} is required`)
    .max(max, `${what} is at most ${max} characters`)
    .refine((s) => ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), `${what} may not contain control characters`)
    .refine((s) => s.trim() === s, `${what} may not start or end with whitespace`);

/**
 * One delivery of an event, as any trigger hands it to the gate: what happened (source, entity, type,
 * when it happened) and its payload, plus the delivery id for tracing. The delivery id never enters
 * the event key.
 */
export const WakeEventSchema = z.strictObject({
  source: Name,
  entity: KeyText('entity', 200),
  type: KeyText('type', 100),
  /** When the event happened in the world (ISO-8601 with offset); not when it was delivered. */
  occurredAt: z.iso.datetime({ offset: true, message: 'occurredAt must be ISO-8601 with a time zone, e.g. 2026-12-02T14:05:00Z' }),
  payload: z.record(z.string(), z.unknown()).default({}),
  /**
   * The entity's version (or ordering number) as the source counts it, when the source has one: an
   * event older than the newest one seen for its wake key is answered `stale` and runs nothing.
   */
  version: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  deliveryId: KeyText('deliveryId', 200).optional(),
});

export type WakeEventInput = z.input<typeof WakeEventSchema>;
export type WakeEvent = z.output<typeof WakeEventSchema>;
