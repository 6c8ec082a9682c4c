import type { Client } from '@temporalio/client';
import { deliverySignal } from '../core/messages';

interface Waiter {
  deliveryId: string;
  eventKey?: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Records delivery ids on open runs, queued: while one `delivery` signal to a run is in flight,
 * the ids that arrive meanwhile queue up and go in the next signal. Each caller's promise settles
 * when the signal that carried its id was accepted by Temporal, so "recorded" is true when the gate
 * answers. A storm of N duplicates becomes a handful of signals instead of N history events.
 */
export class DeliveryQueue {
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly client: Client) {}

  /**
   * Record `deliveryId` (of event `eventKey`, when the workflow took several) on the open workflow
   * `(workflowId, runId)`: a run, or a coalescer holding the event in a pending batch. Rejects as the
   * signal would (e.g. WorkflowNotFoundError).
   */
  record(workflowId: string, runId: string | undefined, deliveryId: string, eventKey?: string): Promise<void> {
    const q = `${workflowId}\n${runId ?? ''}\n${eventKey ?? ''}`;
    return new Promise<void>((resolve, reject) => {
      const waiting = this.queues.get(q);
      const waiter = { deliveryId, eventKey, resolve, reject };
      if (waiting) {
        waiting.push(waiter);
        return;
      }
      this.queues.set(q, [waiter]);
      void this.drain(q, workflowId, runId);
    });
  }

  private async drain(q: string, workflowId: string, runId: string | undefined): Promise<void> {
    const handle = this.client.workflow.getHandle(workflowId, runId);
    for (;;) {
      const queued = this.queues.get(q) ?? [];
      if (queued.length === 0) {
        this.queues.delete(q);
        return;
      }
      this.queues.set(q, []);
      try {
        const eventKey = queued[0]?.eventKey;
        await handle.signal(deliverySignal, { deliveryIds: queued.map((w) => w.deliveryId), ...(eventKey ? { eventKey } : {}) });
        for (const w of queued) w.resolve();
      } catch (err) {
        for (const w of queued) w.reject(err);
      }
    }
  }
}
