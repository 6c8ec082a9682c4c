import { z } from 'zod';
import { defineTrigger } from './definition';

/**
 * Campaign events wake the campaign reporter. Entity = the campaign id, so a config change and a
 * scheduled report for the same campaign in the same hour are one wake, not two posts.
 */
export const campaignsTrigger = defineTrigger({
  source: 'campaigns',
  description: 'Campaign config changes and report ticks: wakes the campaign reporter.',
  agent: 'campaign-reporter',
  eventTypes: ['config.changed', 'report.due'],
  bucket: '1h',
  keyRationale:
    'One report per campaign per hour of the change: the seed’s four posts in six minutes were one logical event woken from three directions.',
  fingerprint: ['dashboards'],
  payload: z.object({ dashboards: z.array(z.string().min(1).max(64)).min(1).max(10) }).passthrough(),
});
