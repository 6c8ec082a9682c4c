import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { decideFirst } from '../core/coalesce-batch';
import type { CoalescerInput, Offer, OfferAnswer, OfferInput } from '../core/coalesce-types';
import { offerSignal } from '../core/messages';
import { chainOf } from '../core/ids';
import { GATE_PRIORITY } from '../core/priority';

/** How long this process takes a coalescer it saw open for open still (its offers go by update, no start tried). */
export const OPEN_KNOWN_MS = 10 * 60_000;
/** Coalescers remembered as open, at most; past it the oldest are forgotten (a start is tried for them again). */
export const OPEN_KEPT = 20_000;

/**
 * A wake key's first event at the cost of a start. With no coalescer open for the key, the gate
 * starts one with the offer in its input (conflict policy FAIL): durable once the server answers,
 * and answered then, without waiting for a worker, with the decision the new chain makes for it
 * first (`decideFirst`, src/core/coalesce-batch.ts, whose batch functions the coalescer's machine uses too: the chain is named by the run ID the start
 * returns). With one open, Temporal refuses the start and the offer goes by update, as every offer
 * to a coalescer this process saw open within OPEN_KNOWN_MS does (the offer queue's `open`, src/coalescer/last-seen.ts).
 */
export async function startWithOffer(client: Client, taskQueue: string, input: OfferInput): Promise<OfferAnswer | undefined> {
  const { agent, wakeKey, policy, offer } = input;
  const args: [CoalescerInput] = [{ agent, wakeKey, policy, first: offer }];
  try {
    const handle = await client.workflow.start('coalescerWorkflow', {
      workflowId: input.coalescerId,
      taskQueue,
      args,
      workflowIdConflictPolicy: 'FAIL',
      priority: GATE_PRIORITY,
    });
    return decideFirst({ agent, wakeKey, policy }, offer, chainOf(handle.firstExecutionRunId));
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    throw err;
  }
}

/**
 * Offers to a coalescer by signal-with-start (durable once the server answers; decided when a worker
 * takes it): the gate's fallback, and the supervisor's recovery of a coalescer terminated by hand.
 */
export async function offerBySignal(client: Client, taskQueue: string, to: Omit<OfferInput, 'offer'>, offers: Offer[]): Promise<void> {
  await signalCoalescer(client, taskQueue, to, offerSignal, offers);
}

/** Signals a coalescer, starting it (a new chain) when none runs under its ID. */
export async function signalCoalescer<T>(
  client: Client,
  taskQueue: string,
  to: Omit<OfferInput, 'offer'>,
  signal: SignalDefinition<[T]>,
  arg: T,
): Promise<void> {
  await client.workflow.signalWithStart<(input: CoalescerInput) => Promise<unknown>, [T]>('coalescerWorkflow', {
    workflowId: to.coalescerId,
    taskQueue,
    args: [{ agent: to.agent, wakeKey: to.wakeKey, policy: to.policy }],
    signal,
    signalArgs: [arg],
    priority: GATE_PRIORITY,
  });
}
