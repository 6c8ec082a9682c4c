import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';

/** Policy look-up: cheap, retried a few times. */
export const { loadAgentPolicy } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['UnknownAgent'] },
});

/**
 * Tool calls heartbeat every second; a 5 s heartbeat timeout notices a dead worker fast and lets a
 * kill reach them. They only read, so a retry is harmless.
 */
export const { toolCall } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3, nonRetryableErrorTypes: ['UnknownTool', 'ProviderRejected'] },
});

/**
 * A model call: one attempt per schedule (same timeouts as a tool call). The workflow retries it
 * (`MODEL_CALL_RETRY` in model-turn.ts) with a budget reservation per attempt, because a provider
 * may bill an attempt that fails or times out.
 */
export const { modelCall } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { maximumAttempts: 1 },
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
