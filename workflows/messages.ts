import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeliveryNotice, WakeStatus } from './types';

/** Duplicate deliveries of an open run's event: their ids are recorded on the run (fire and forget). */
export const deliverySignal = defineSignal<[DeliveryNotice]>('delivery');

/** The open run's phase and the deliveries seen so far. */
export const statusQuery = defineQuery<WakeStatus>('status');
