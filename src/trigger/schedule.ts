import { z } from 'zod';
import { defineTrigger } from './definition';
import { scheduleWindowRunKey } from '../core/ids';
import { isoSeconds } from '../core/time';

/**
 * Scheduled wakes (schedules/): entity = schedule id, type `tick`, occurredAt = the window's nominal
 * time (not when the tick happened to start), so a window fired twice (schedule plus trigger, two
 * backfills, a retried tick) is one logical event and runs once.
 */
export const scheduleTrigger = defineTrigger({
  source: 'schedule',
  description: 'A window of a wakegate schedule (Temporal Schedule tick or fixed-delay loop).',
  wakes: 'named',
  eventTypes: ['tick'],
  bucket: '1s',
  keyRationale:
    'One logical event per (schedule, nominal window). Temporal truncates nominal times to the second and no schedule fires more ' +
    'often than once a second (spec.every and delay are at least 1 s), so a 1 s bucket never merges two distinct windows and ' +
    'never splits one.',
  fingerprint: 'payload',
  payload: z.record(z.string(), z.unknown()),
  // The Temporal Schedule starts a one-call agent's window itself, as `<agent>@schedule/tick/<id>-<nominal>`:
  // the window emitted through the gate is the same run.
  runKey: (agent, event) => scheduleWindowRunKey(agent, event.entity, isoSeconds(event.bucketStartMs)),
});
