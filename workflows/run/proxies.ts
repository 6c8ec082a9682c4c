import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';

/**
 * The agent's policy, the run's merged payload and the supervisor's verdict: cheap, and retried until
 * it succeeds. The verdict may need a permit from the supervisor, which takes no update while its
 * workflow task is failing (a worker that held it was killed) or while Temporal restarts: the run
 * waits that out, however long, rather than failing before its work began. A defect (an unknown
 * agent, an agent's `mergePayload` that throws, a request the supervisor refuses) fails at once.
 */
export const { prepareRun } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [FailureType.UnknownAgent, FailureType.MergeFailed, FailureType.SupervisorRefused],
  },
});

/**
 * When a run is cancelled (a kill, a halt, its coalescer superseding it), it
 * waits for the step in flight to have stopped before it ends: a model turn or a tool call left
 * running after the run says `cancelled` would go on spending tokens that no run shows, and on
 * Temporal's test server would hold the clock. Steps heartbeat at least every second (the worker's
 * `maxHeartbeatThrottleInterval`), so the wait is about a second.
 */
function stepCancellation(): ActivityCancellationType {
  return ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;
}

/**
 * A model turn: one attempt per schedule. The workflow retries it (`MODEL_TURN_RETRY` in
 * model-turn.ts) with a budget reservation per attempt, because a provider may bill an attempt that
 * fails or times out. Heartbeats every second; a 5 s heartbeat timeout notices a dead worker fast
 * and lets a kill reach it. `budgetLeftMs` (a run's turn, not a subagent's): the attempt times out
 * (schedule-to-close) when the run's wall-clock budget ends, as a tool call does.
 */
export function modelTurn(req: Parameters<Activities['modelTurn']>[0], budgetLeftMs?: number): ReturnType<Activities['modelTurn']> {
  return proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    ...(budgetLeftMs !== undefined ? { scheduleToCloseTimeout: budgetLeftMs } : {}),
    heartbeatTimeout: '5 seconds',
    cancellationType: stepCancellation(),
    retry: { maximumAttempts: 1 },
  }).modelTurn(req);
}

/**
 * A tool call with the tool's own time limit (from the agent's policy). Tools only read, so a retry
 * is harmless. They heartbeat every second with their progress; a 10 s heartbeat timeout notices a
 * dead worker and carries a kill. `budgetLeftMs`, what is left of the run's wall-clock budget (a run
 * has no deadline timer): the call with its retries times out (schedule-to-close) when the run's wall-clock
 * budget ends; a running attempt learns it at its next heartbeat and is cancelled.
 */
export function toolCallWithin(timeoutMs: number, budgetLeftMs?: number): Activities['toolCall'] {
  return proxyActivities<Activities>({
    startToCloseTimeout: timeoutMs,
    ...(budgetLeftMs !== undefined ? { scheduleToCloseTimeout: budgetLeftMs } : {}),
    heartbeatTimeout: '10 seconds',
    cancellationType: stepCancellation(),
    retry: {
      initialInterval: '1 second',
      maximumAttempts: 3,
      nonRetryableErrorTypes: [FailureType.UnknownAgent, FailureType.UnknownTool, FailureType.InvalidArguments, FailureType.ProviderRejected],
    },
  }).toolCall;
}

/** A held run asks the supervisor again (its worker's cached read of the supervisor, and a permit when a cap held it). */
export const { recheckHold } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 5 },
});
