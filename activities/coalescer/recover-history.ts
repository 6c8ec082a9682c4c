import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import type { SignalDefinition } from '@temporalio/common';
import type { CoalescerInput, CoalescerStatus, Offer, OfferInput } from '../../src/core/coalesce-types';
import { adoptSignal, deliverySignal, offerSignal } from '../../src/core/messages';

/**
 * What the recovery of a terminated coalescer (recover.ts) reads from the execution's history: the
 * messages no worker took.
 */

const { EventType } = temporal.api.enums.v1;

export type Adopted = Parameters<typeof adoptSignal extends SignalDefinition<infer A> ? (...a: A) => void : never>[0];
export type Delivered = Parameters<typeof deliverySignal extends SignalDefinition<infer A> ? (...a: A) => void : never>[0];
/** What a terminated coalescer left: its state (none when it never had one) and the messages its history holds untaken. */
export interface Left {
  to: Omit<OfferInput, 'offer'>;
  status?: Pick<CoalescerStatus, 'state' | 'openSkips'>;
  untaken: { offers: Offer[]; adopts: Adopted[]; deliveries: Delivered[] };
}

/**
 * A coalescer execution terminated before any worker took a task of it has no state to query: no
 * workflow task completed. It holds nothing but its input and the messages in its history: a new
 * key's coalescer started by the gate with its first offer while the workers were behind (input
 * `first`), or an execution continued as new (input `state`, which holds no open skip: every skip is
 * settled before a continue-as-new), and the offers, tables and delivery ids signalled to it. Those,
 * or undefined when a workflow task did complete (its state is then read by query, tried again).
 */
export async function untakenOf(client: Client, info: WorkflowExecutionInfo): Promise<Left | undefined> {
  const { events } = await client.workflow.getHandle(info.workflowId, info.runId).fetchHistory();
  if (!events?.length || events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) return undefined;
  const decode = async (p: temporal.api.common.v1.IPayloads | null | undefined) =>
    p?.payloads?.length ? decodeArrayFromPayloads(client.options.loadedDataConverter, p.payloads) : [];
  const [input] = (await decode(events[0]?.workflowExecutionStartedEventAttributes?.input)) as [CoalescerInput | undefined];
  const signals: { name: string; arg: unknown }[] = [];
  for (const e of events) {
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (signal) signals.push({ name: signal.signalName ?? '', arg: ((await decode(signal.input)) as unknown[])[0] });
  }
  return input?.agent ? untakenFrom(input, signals, info.workflowId) : undefined;
}

/** What an execution no worker took holds, from its input and the signals in its history, in order (pure). */
export function untakenFrom(input: CoalescerInput, signals: readonly { name: string; arg: unknown }[], coalescerId: string): Left {
  const untaken: Left['untaken'] = { offers: input.first && !input.state ? [input.first] : [], adopts: [], deliveries: [] };
  for (const { name, arg } of signals) {
    if (name === offerSignal.name) untaken.offers.push(...((arg as Offer[] | undefined) ?? []).filter((o) => o?.event?.eventKey));
    else if (name === adoptSignal.name && Array.isArray((arg as Adopted | undefined)?.seen)) untaken.adopts.push(arg as Adopted);
    else if (name === deliverySignal.name && (arg as Delivered | undefined)?.eventKey) untaken.deliveries.push(arg as Delivered);
  }
  return {
    to: { agent: input.agent, wakeKey: input.wakeKey, coalescerId, policy: input.policy },
    ...(input.state ? { status: { state: input.state, openSkips: [] } } : {}),
    untaken,
  };
}
