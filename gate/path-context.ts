import type { Client } from '@temporalio/client';
import type { DeliveryBatcher } from './delivery-batcher';
import type { OfferBatcher } from './offer-batcher';

/** What both admission paths need: the client, the task queue, the delivery recorder, the offer batcher, how long to wait for a decision. */
export interface PathContext {
  client: Client;
  taskQueue: string;
  deliveries: DeliveryBatcher;
  offers: OfferBatcher;
  /** How long a delivery waits for its coalescer's decision before it is taken by signal and answered `accepted`, ms. */
  decisionWaitMs: number;
}
