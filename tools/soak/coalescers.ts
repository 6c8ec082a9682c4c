import type { Client } from '@temporalio/client';
import { coalescerQuery, eventQuery } from '../../src/core/messages';
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
    const ofEvent = deliveries.filter((d) => d.eventKey === eventKey);
    const coalescerId = ofEvent.flatMap((d) => [...(d.wakes ?? []).flatMap((w) => (w.coalescerId ? [w.coalescerId] : [])), ...(d.coalescerIds ?? [])])[0];
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

/** Coalescers of the task queue with a batch not started yet or a run live: runs to come, which the drain waits for. */
export async function busyCoalescers(client: Client, taskQueue: string): Promise<string[]> {
  const busy: string[] = [];
  for await (const info of client.workflow.list({
    query: `WorkflowType = "coalescerWorkflow" AND TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`,
  })) {
    const status = await client.workflow
      .getHandle(info.workflowId)
      .query(coalescerQuery, { seenLast: 0 })
      .catch(() => undefined);
    if (!status || status.state.pending || status.state.running) busy.push(info.workflowId);
  }
  return busy;
}
