import { z } from 'zod';
import { defineTrigger } from './definition';

/**
 * The built-in diagnostic source. `ping` wakes the canary agent, which records the event, holds for
 * `holdMs` if asked (heartbeating, cancellable) and ends `success`: operators and scripts use it to
 * check the whole path (trigger, gate, worker, Temporal) end to end.
 */
export const pingTrigger = defineTrigger({
  source: 'ping',
  description: 'Diagnostic canary: checks the path trigger -> gate -> run end to end.',
  eventTypes: '*',
  bucket: '1h',
  keyRationale:
    'One ping per (entity, type) per hour of the time the operator says it happened: a retried `emit` with the same --occurred-at is the same ping; a new check an hour later is a new one.',
  fingerprint: 'payload',
  payload: z
    .object({
      holdMs: z.number().int().min(0).max(3_600_000).optional(),
      note: z.string().max(500).optional(),
    })
    .passthrough(),
});
