import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HaltRequest, PersonAction, ReleaseRecord, ReleaseRequest, SupervisorPolicy, SupervisorStatus, WakeCounts } from './supervisor-types';
import type { LeaseAnswer, LeaseRequest, UnusedPermits } from './permit-types';

/** Gate processes report the wakes they admitted, counted together per interval (fire and forget; signal-with-start). */
export const wakesSignal = defineSignal<[WakeCounts]>('wakes');

/**
 * A worker process asks for permits for the runs starting on it when its local stock is short:
 * one block for the runs waiting plus a prefetch, at most one in flight per process.
 */
export const leaseUpdate = defineUpdate<LeaseAnswer, [LeaseRequest]>('lease');

/** A worker process hands back prefetched permits it did not use (fire and forget, in one block). */
export const unusedPermitsSignal = defineSignal<[UnusedPermits]>('unusedPermits');

/** A person resets a tripped or halted breaker; recorded. Rejected when the breaker is armed. */
export const resetUpdate = defineUpdate<SupervisorStatus, [PersonAction]>('reset');

/** A person halts (live runs cancelled) or drains (live runs finish); new wakes are held either way. */
export const haltUpdate = defineUpdate<SupervisorStatus, [HaltRequest]>('halt');

/** A person releases held wakes (all or one agent's) or discards them; release needs an armed breaker. */
export const releaseUpdate = defineUpdate<ReleaseRecord, [ReleaseRequest]>('release');

/** A worker brings the policy declared in its code. */
export const configureUpdate = defineUpdate<void, [SupervisorPolicy]>('configure');

export const supervisorStatusQuery = defineQuery<SupervisorStatus>('supervisorStatus');

/** Tells a held run to re-check the supervisor now (a release or discard was recorded). */
export const holdNudgeSignal = defineSignal('holdNudge');
