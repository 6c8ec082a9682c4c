import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import type { SignalDefinition } from '@temporalio/common';
import type { CoalescerInput, CoalescerStatus, Offer, OfferInput } from '../../src/core/coalesce-types';
import { adoptSignal, deliverySignal, offerSignal } from '../../src/core/messages';

/**
 * What the recovery of a terminated coalescer (recover.ts) reads from the execution's history: the
 * messages no worker took, and whether its live run had started.
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
  const { input, signals, taskCompleted } = await historyOf(client, info);
  if (taskCompleted) return undefined;
  return input?.agent ? untakenFrom(input, signals, info.workflowId) : undefined;
}

/** What a coalescer execution's history holds: its input, the signals sent to it in order, the runs it started (children), whether a workflow task of it completed. */
export interface History {
  input?: CoalescerInput;
  signals: { name: string; arg: unknown }[];
  children: string[];
  taskCompleted: boolean;
}

export async function historyOf(client: Client, info: WorkflowExecutionInfo): Promise<History> {
  const { events } = await client.workflow.getHandle(info.workflowId, info.runId).fetchHistory();
  const decode = async (p: temporal.api.common.v1.IPayloads | null | undefined) =>
    p?.payloads?.length ? decodeArrayFromPayloads(client.options.loadedDataConverter, p.payloads) : [];
  const [input] = (await decode(events?.[0]?.workflowExecutionStartedEventAttributes?.input)) as [CoalescerInput | undefined];
  const signals: History['signals'] = [];
  const children: string[] = [];
  for (const e of events ?? []) {
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (signal) signals.push({ name: signal.signalName ?? '', arg: ((await decode(signal.input)) as unknown[])[0] });
    const child = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
    if (child) children.push(child);
  }
  const taskCompleted = !events?.length || events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  return { ...(input ? { input } : {}), signals, children, taskCompleted };
}

/**
 * Whether a terminated coalescer execution's history shows that `runKey` had started: its start
 * there (the child's started event), or the run came to it started: carried in its input from the
 * execution before (which awaited its start), or given to it by a recovery (an `adopt` signal's live
 * or foreign run). Not found in Temporal, a run that had started was deleted since: a person re-armed
 * it (`wakegate rearm`, through the chain now running, which forgets its events: `forgottenRuns`),
 * so its events are decided afresh on their next delivery, never offered again (a phantom's are).
 */
export function startedIn(history: Pick<History, 'input' | 'signals' | 'children'>, runKey: string): boolean {
  const { input, signals, children } = history;
  const carried = [input?.state?.running, ...(input?.state?.foreign ?? [])];
  const adopted = signals
    .filter((s) => s.name === adoptSignal.name)
    .flatMap((s) => [(s.arg as Adopted | undefined)?.live, ...((s.arg as Adopted | undefined)?.foreign ?? [])]);
  return children.includes(runKey) || [...carried, ...adopted].some((r) => r?.runKey === runKey);
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
