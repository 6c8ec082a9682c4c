import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';

/** Policy look-up: cheap, retried a few times. */
export const { loadAgentPolicy } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['UnknownAgent'] },
});

/**
 * Model and tool calls heartbeat every second; a 5 s heartbeat timeout notices a dead worker fast
 * and lets a kill reach them. Both only read, so a retry is harmless (a retried model call is
 * charged again: its reservation is taken before every attempt's turn, see agent-loop).
 */
export const { modelCall, toolCall } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3, nonRetryableErrorTypes: ['UnknownTool', 'ProviderRejected'] },
});

/**
 * Effects: retried until they land or fail for good, always under the same effect key. The server
 * refuses a timed-out attempt's late completion (the fence), so only one attempt's outcome counts.
 */
export const { commitEffect } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 6, nonRetryableErrorTypes: ['EffectAmbiguous', 'ProviderRejected'] },
});
