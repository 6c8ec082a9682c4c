import type { Client } from '@temporalio/client';
import { coalescerQuery, eventQuery } from '../core/messages';
import type { Delivery } from './load';

/** What a coalescer holds about an event the runs do not show: its decision, or why there is none. */
export interface CoalescerWord {
  eventKey: string;
  coalescerId: string;
  decision?: string;
  runKey?: string;
  /** The coalescer's pending batch and live run at the time of asking (a batch not yet started is not lost yet). */
  pending?: number;
  running?: string;
  error?: string;
}

/**
 * Ask each event's coalescer (the workflow its answer named) what it decided: an event answered
 * `accepted` (taken durably, decided later) may have been decided `stale`, which no run shows.
 */
export async function askCoalescers(client: Client, deliveries: Delivery[], eventKeys: string[]): Promise<CoalescerWord[]> {
  const words: CoalescerWord[] = [];
  for (const eventKey of eventKeys) {
    const coalescerId = deliveries.find((d) => d.eventKey === eventKey && d.wakes?.some((w) => w.coalescerId))?.wakes?.find((w) => w.coalescerId)?.coalescerId;
    if (!coalescerId) {
      words.push({ eventKey, coalescerId: coalescerId ?? '?', error: 'no coalescer named in its answers' });
      continue;
    }
    const handle = client.workflow.getHandle(coalescerId);
    try {
      const answer = await handle.query(eventQuery, { eventKey });
      const status = await handle.query(coalescerQuery, { seenLast: 0 });
      words.push({
        eventKey,
        coalescerId,
        decision: answer?.decision,
        runKey: answer?.runKey,
        pending: status.state.pending?.events.length,
        running: status.state.running?.runKey,
      });
    } catch (err) {
      words.push({ eventKey, coalescerId, error: (err as Error).message });
    }
  }
  return words;
}
