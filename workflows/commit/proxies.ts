import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';

/**
 * Effects: retried until they land or fail for good, always under the same effect key. The server
 * refuses a timed-out attempt's late completion (the fence), so only one attempt's outcome counts.
 * A cancelled run does not cancel an effect in flight (see `commitEffects`): it lets it finish.
 */
export const { commitEffect } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '5 seconds',
  retry: {
    initialInterval: '1 second',
    maximumAttempts: 6,
    nonRetryableErrorTypes: [
      FailureType.EffectAmbiguous,
      FailureType.ProviderRejected,
      FailureType.UnknownAgent,
      FailureType.UnknownEffect,
      FailureType.InvalidArguments,
    ],
  },
});

/** A shadow run's record of one effect: local work (a schema check), retried like any read. */
export const { recordEffect } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [FailureType.UnknownAgent, FailureType.UnknownEffect, FailureType.InvalidArguments],
  },
});
