import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../contracts';
import { FailureType } from '../failures';

/** The agent's policy and the run's merged payload: cheap, retried a few times. */
export const { prepareRun } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.UnknownAgent] },
});

/**
 * A model call: one attempt per schedule. The workflow retries it (`MODEL_CALL_RETRY` in
 * model-turn.ts) with a budget reservation per attempt, because a provider may bill an attempt that
 * fails or times out. Heartbeats every second; a 5 s heartbeat timeout notices a dead worker fast
 * and lets a kill reach it.
 */
export const { modelCall } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { maximumAttempts: 1 },
});

/**
 * A tool call with the tool's own time limit (from the agent's policy). Tools only read, so a retry
 * is harmless. They heartbeat every second with their progress; a 10 s heartbeat timeout notices a
 * dead worker and carries a kill.
 */
export function toolCallWithin(timeoutMs: number): Activities['toolCall'] {
  return proxyActivities<Activities>({
    startToCloseTimeout: timeoutMs,
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.UnknownAgent, FailureType.UnknownTool, FailureType.ProviderRejected] },
  }).toolCall;
}

/**
 * Effects: retried until they land or fail for good, always under the same effect key. The server
 * refuses a timed-out attempt's late completion (the fence), so only one attempt's outcome counts.
 */
export const { commitEffect } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 6, nonRetryableErrorTypes: [FailureType.EffectAmbiguous, FailureType.ProviderRejected, FailureType.UnknownAgent, FailureType.UnknownEffect] },
});

/** A held run asks the supervisor again (its worker's cached read of the supervisor, and a permit when a cap held it). */
export const { recheckHold } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 5 },
});
