import { z } from 'zod';
import { defineTrigger } from './definition';

/**
 * The built-in diagnostic source. `ping` wakes the canary agent (its definition names this source),
 * which records the event, holds for `holdMs` if asked (heartbeating, cancellable) and ends
 * `success`: operators and scripts use it to check the whole path (trigger, gate, worker, Temporal).
 */
export const pingTrigger = defineTrigger({
  source: 'ping',
  description: 'Diagnostic canary: checks the path trigger -> gate -> run end to end.',
  eventTypes: '*',
  bucket: '1h',
  keyRationale:
    'One ping per (entity, type) per hour of the time the operator says it happened: a retried `emit` with the same --occurred-at is the same ping; a new check an hour later is a new one.',
  fingerprint: 'payload',
  // What the payload may hold is the woken agent's to say (the canary's `holdMs`, `note`).
  payload: z.record(z.string(), z.unknown()),
});
