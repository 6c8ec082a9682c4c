import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, DeliveryNotice, KillRequest, UpdateAck, WakeStatus } from './types';

/** Duplicate deliveries of an open run's event: their ids are recorded on the run (fire and forget). */
export const deliverySignal = defineSignal<[DeliveryNotice]>('delivery');

/** The open run's phase and the deliveries seen so far. */
export const statusQuery = defineQuery<WakeStatus>('status');

/**
 * The kill switch: stops the run before its next step, cancels what is in flight, commits nothing
 * further; the run ends `cancelled`. An update, so the caller sees it accepted (rejected once the run is done).
 */
export const killUpdate = defineUpdate<UpdateAck, [KillRequest]>('kill');

/**
 * A person approves the irreversible effect the run is waiting on. A signal, not an update: a
 * decision that reaches a run in the same workflow task as other new events (a worker was down) must
 * replay in history order; an update accepted there replayed in another order than it ran (a
 * non-determinism the crash tests found with SDK 1.24). The CLI checks the `status` query first.
 */
export const approveSignal = defineSignal<[ApprovalDecision]>('approve');

/** A person rejects it: the effect is not made and the run ends `blocked`. */
export const rejectSignal = defineSignal<[ApprovalDecision]>('reject');
