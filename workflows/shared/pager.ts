import { proxyActivities } from '@temporalio/workflow';
import type { SupervisorActivities } from '../../src/core/contracts';

/**
 * A page through the supervisor's pager, from any workflow that pages (the supervisor, a rollout):
 * retried for about ten minutes; its dedup key makes the retries one incident.
 */
export const { sendPage } = proxyActivities<SupervisorActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 20, initialInterval: '2 seconds', maximumInterval: '1 minute' },
});
