import { log } from '@temporalio/activity';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { CoalescerStatus, Offer } from '../../core/coalesce-types';
import { coalescerQuery } from '../../core/messages';
import { offerBySignal } from '../../gate/offer-batcher';

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** Terminated coalescers looked at in one round, at most (a mass termination is taken over several). */
const PER_ROUND = 200;

/**
 * A coalescer terminated by hand (as from the Web UI) loses what it held in memory: the pending batch
 * (events answered `started` or `coalesced` whose run had not started) and the steered events owed
 * to its live run. Temporal still answers a query on the terminated execution (a worker replays its
 * history up to the termination), so its last state can be read: its pending events are offered
 * again to the coalescer's ID by signal-with-start (a new chain if none runs), each under an offer id
 * of its own, and run there. What the new chain already decided (a redelivery since) stays decided.
 * Its dedup table is not carried over: a redelivery of an event the terminated chain had run is
 * decided afresh (at least once, never lost). Called by the supervisor's round over closed runs
 * (activities/supervise/supervise.ts), for the coalescers that closed terminated within that round.
 * Returns how many events were offered again.
 */
export async function recoverTerminatedCoalescers(client: Client, taskQueue: string, fromMs: number, toMs: number): Promise<number> {
  const query =
    `WorkflowType = 'coalescerWorkflow' AND TaskQueue = ${quote(taskQueue)} AND ExecutionStatus = 'Terminated'` +
    ` AND CloseTime > ${quote(new Date(fromMs).toISOString())} AND CloseTime <= ${quote(new Date(toMs).toISOString())}`;
  const found: WorkflowExecutionInfo[] = [];
  for await (const info of client.workflow.list({ query, pageSize: PER_ROUND })) {
    found.push(info);
    if (found.length >= PER_ROUND) break;
  }
  let offered = 0;
  for (const info of found) offered += await recoverOne(client, taskQueue, info);
  return offered;
}

async function recoverOne(client: Client, taskQueue: string, info: WorkflowExecutionInfo): Promise<number> {
  let status: CoalescerStatus;
  try {
    status = await client.workflow.getHandle(info.workflowId, info.runId).query(coalescerQuery, { seenLast: 0 });
  } catch (err) {
    log.warn('coalescer recovery: could not read a terminated coalescer', { coalescerId: info.workflowId, runId: info.runId, err: String(err) });
    return 0;
  }
  const { pending } = status.state;
  if (!pending?.events.length) return 0;
  const offers: Offer[] = pending.events.map((event) => ({ event, offerId: `recovered:${info.runId}:${event.eventKey}` }));
  await offerBySignal(client, taskQueue, { agent: status.agent, wakeKey: status.wakeKey, coalescerId: status.coalescerId, policy: status.policy }, offers);
  log.warn('coalescer recovery: a terminated coalescer’s pending events offered again', {
    coalescerId: info.workflowId,
    runId: info.runId,
    events: offers.length,
    runKey: pending.runKey,
  });
  return offers.length;
}
