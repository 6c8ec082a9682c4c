import type { Client } from '@temporalio/client';
import type { DeliveryBatcher } from './delivery-batcher';

/** What both admission paths need: the client, the task queue, the delivery recorder, how long to wait for a decision. */
export interface PathContext {
  client: Client;
  taskQueue: string;
  deliveries: DeliveryBatcher;
  /** How long a delivery waits for its coalescer's decision before it is answered `accepted`, ms. */
  decisionWaitMs: number;
}
