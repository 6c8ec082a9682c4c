import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../../src/core/contracts';
import { DEFAULT_EFFECT_TIMEOUT_MS, type EffectPolicy } from '../../src/core/policy';
import { FailureType } from '../../src/core/failures';

/**
 * Effects: retried until they land or fail for good, always under the same effect key. The server
 * refuses a timed-out attempt's late completion (the fence), so only one attempt's outcome counts.
 * A cancelled run does not cancel an effect in flight (see `commitEffects`): it lets it finish.
 *
 * Timing: an attempt may take the effect's `timeout` (default 30 s). The activity heartbeats every
 * second, so an attempt whose worker died is given up 5 s after its last heartbeat (or at its
 * timeout, if sooner). Six attempts in all, the next one 1, 2, 4, 8 and 16 s after the one before
 * failed: an effect whose worker was SIGKILLed is tried again about 5 to 20 s later, on any worker.
 */
const COMMIT_OPTIONS = {
  heartbeatTimeout: '5 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 6,
    nonRetryableErrorTypes: [
      FailureType.EffectAmbiguous,
      FailureType.ProviderRejected,
      FailureType.UnknownAgent,
      FailureType.UnknownEffect,
      FailureType.InvalidArguments,
    ],
  },
} satisfies ActivityOptions;

/**
 * The commit activity of one effect, under its own timeout. Its options are the effect's policy
 * (input to the run, never read from config), so a replay schedules the same activity.
 */
export function commitEffectOf(effect: Pick<EffectPolicy, 'timeoutMs'>): Activities['commitEffect'] {
  return proxyActivities<Activities>({ ...COMMIT_OPTIONS, startToCloseTimeout: effect.timeoutMs ?? DEFAULT_EFFECT_TIMEOUT_MS }).commitEffect;
}

/** A shadow run's record of one effect: local work (a schema check), retried like any read. */
export const { recordEffect } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [FailureType.UnknownAgent, FailureType.UnknownEffect, FailureType.InvalidArguments],
  },
});
