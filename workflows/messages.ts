import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, DeliveryNotice, KillRequest, UpdateAck, WakeStatus } from './types';

/** A duplicate delivery of an open run's event: its id is recorded on the run (fire and forget). */
export const deliverySignal = defineSignal<[DeliveryNotice]>('delivery');

/** The open run's phase and the deliveries seen so far. */
export const statusQuery = defineQuery<WakeStatus>('status');

/**
 * The kill switch: stops the run before its next step, cancels what is in flight, commits nothing
 * further; the run ends `cancelled`. An update, so the caller sees it accepted (rejected once the run is done).
 */
export const killUpdate = defineUpdate<UpdateAck, [KillRequest]>('kill');

/** A person approves the irreversible effect the run is waiting on. Rejected when nothing waits. */
export const approveUpdate = defineUpdate<UpdateAck, [ApprovalDecision]>('approve');

/** A person rejects it: the effect is not made and the run ends `blocked`. */
export const rejectUpdate = defineUpdate<UpdateAck, [ApprovalDecision]>('reject');
