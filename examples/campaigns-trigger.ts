import { z } from 'zod';
import { defineTrigger } from 'wakegate';

/**
 * Campaign events: config changes and report requests. What happened is one change (or one report
 * request) at its own time; which campaign report it asks for is the reporter's wake key, not this key.
 */
export const campaignsTrigger = defineTrigger({
  source: 'campaigns',
  description: 'Campaign config changes and report requests.',
  eventTypes: ['config.changed', 'report.due'],
  bucket: '1s',
  keyRationale:
    'One logical event per (campaign, type, second of the event’s own time): a redelivered change carries the same occurredAt, ' +
    'a genuine second change has its own. Folding a campaign’s wakes together is the reporter’s coalescer’s job (wake key = ' +
    'campaign), not the event key’s: an hour bucket here refused a real second change as a mismatch.',
  fingerprint: ['dashboards'],
  payload: z.object({ dashboards: z.array(z.string().min(1).max(64)).min(1).max(10).optional() }).passthrough(),
});
