import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import type { CoalescerInput, Offer, OfferAnswer } from '../../src/core/coalesce-types';
import { chainOf } from '../../src/core/ids';
import { decideFirst } from '../../src/core/coalesce-batch';
import { offerSignal, offerUpdate } from '../../src/core/messages';
import type { ModelRequest } from '../../src/core/contracts';

/*
 * What the soak's operator accounting reads from Temporal's own records (visibility and histories),
 * never from what the soak remembers doing: every event offered to each coalescer, with the answer
 * the coalescer gave where it gave one; and for the steer agent's runs, what each model turn was given.
 */

type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

async function first(client: Client, payloads: Payloads): Promise<unknown> {
  if (!payloads?.payloads?.length) return undefined;
  const [value] = await decodeArrayFromPayloads(client.options.loadedDataConverter, payloads.payloads);
  return value;
}

/** One event offered to a coalescer, as its history holds it. */
export interface OfferSeen {
  eventKey: string;
  source: string;
  version?: number;
  /** When the coalescer took the offer (the update's acceptance, or the signal), epoch ms. */
  atMs: number;
  /** The coalescer's answer (an update's result); absent for an offer sent by signal, which is answered by nothing. */
  decision?: OfferAnswer['decision'];
  /** The answer was a redelivery's (the event was decided before, within the dedup horizon). */
  duplicate?: boolean;
  /** The gate's id for the offer (a fallback signal repeats its update's). */
  offerId?: string;
  /** The run the answer named (for `skipped`, the live run the event was skipped for). */
  runKey?: string;
}

/** Every event offered to one coalescer (agent#wakeKey), across all its executions (continue-as-new, closes), in the order taken. */
export interface CoalescerOffers {
  coalescerId: string;
  agent: string;
  offers: OfferSeen[];
}

/** Every coalescer of the task queue (any status) with the offers its histories hold. */
export async function readCoalescerOffers(client: Client, taskQueue: string): Promise<CoalescerOffers[]> {
  const byId = new Map<string, CoalescerOffers>();
  const infos: { workflowId: string; runId: string }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowType = "coalescerWorkflow" AND TaskQueue = "${taskQueue}"` }))
    infos.push({ workflowId: info.workflowId, runId: info.runId });
  for (const { workflowId, runId } of infos) {
    const entry = byId.get(workflowId) ?? { coalescerId: workflowId, agent: workflowId.slice(0, workflowId.indexOf('#')), offers: [] };
    byId.set(workflowId, entry);
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const pending = new Map<string, OfferSeen[]>();
    for (const e of history.events ?? []) {
      const atMs = e.eventTime ? tsToMs(e.eventTime) : 0;
      const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
      const signaled = e.workflowExecutionSignaledEventAttributes;
      const done = e.workflowExecutionUpdateCompletedEventAttributes;
      const started = e.workflowExecutionStartedEventAttributes;
      if (started) {
        // A new chain started by the gate with its first offer, answered as the chain decides it.
        const input = (await first(client, started.input)) as CoalescerInput | undefined;
        if (input?.first && !input.state) {
          // The chain is named by its first run (a run reset by hand keeps it), as the workflow names it.
          const answer = decideFirst(input, input.first, chainOf(started.firstExecutionRunId || runId));
          entry.offers.push({ ...offerSeen(input.first, atMs), decision: answer.decision, ...(answer.runKey ? { runKey: answer.runKey } : {}) });
        }
      } else if (accepted?.input?.name === offerUpdate.name) {
        const offers = ((await first(client, accepted.input.args)) as Offer[] | undefined) ?? [];
        const seen = offers.map((o) => offerSeen(o, atMs));
        pending.set(accepted.meta?.updateId ?? '', seen);
        entry.offers.push(...seen);
      } else if (signaled?.signalName === offerSignal.name) {
        const offers = ((await first(client, signaled.input)) as Offer[] | undefined) ?? [];
        entry.offers.push(...offers.map((o) => offerSeen(o, atMs)));
      } else if (done) {
        const seen = pending.get(done.meta?.updateId ?? '');
        if (!seen || !done.outcome?.success) continue;
        const answers = ((await first(client, done.outcome.success)) as OfferAnswer[] | undefined) ?? [];
        seen.forEach((s, i) => {
          if (answers[i]) s.decision = answers[i].decision;
          if (answers[i]?.duplicate) s.duplicate = true;
          if (answers[i]?.runKey) s.runKey = answers[i].runKey;
        });
      }
    }
  }
  for (const c of byId.values()) c.offers.sort((a, b) => a.atMs - b.atMs);
  return [...byId.values()];
}

function offerSeen(o: Offer, atMs: number): OfferSeen {
  return {
    eventKey: o.event.eventKey,
    source: o.event.source,
    atMs,
    ...(o.offerId ? { offerId: o.offerId } : {}),
    ...(o.event.version !== undefined ? { version: o.event.version } : {}),
  };
}

/** One closed run of an agent, with what its model turns were given (the `modelTurn` activities' inputs, as scheduled). */
export interface RunGiven {
  workflowId: string;
  agent: string;
  status: string;
  terminalReason?: string;
  /** The events its result lists as absorbed; absent when it has no result (failed, terminated). */
  absorbed?: string[];
  steered?: string[];
  /** Every message content its model turns were given, joined. */
  given: string;
  modelTurns: number;
}

/**
 * Closed runs of `agent` with what their model saw. A model turn is an activity whose input is the
 * whole request the model is sent (its messages), so its ActivityTaskScheduled event in the run's
 * history is Temporal's record of what that model was given, not the run's own account of it.
 */
export async function readRunsGiven(client: Client, taskQueue: string, agent: string): Promise<RunGiven[]> {
  const out: RunGiven[] = [];
  const infos: { workflowId: string; runId: string; status: string }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowType = "runWorkflow" AND TaskQueue = "${taskQueue}" AND WakeAgent = "${agent}"` }))
    infos.push({ workflowId: info.workflowId, runId: info.runId, status: info.status.name });
  for (const { workflowId, runId, status } of infos) {
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') continue;
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const run: RunGiven = { workflowId, agent, status, given: '', modelTurns: 0 };
    const texts: string[] = [];
    for (const e of history.events ?? []) {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'modelTurn') {
        const req = (await first(client, scheduled.input)) as Partial<ModelRequest> | undefined;
        run.modelTurns++;
        for (const m of req?.messages ?? []) texts.push(m.content);
      }
      const completed = e.workflowExecutionCompletedEventAttributes;
      if (completed) {
        const r = (await first(client, completed.result)) as { terminalReason?: string; absorbed?: { eventKey: string }[]; steered?: string[] } | undefined;
        run.terminalReason = r?.terminalReason;
        if (r?.absorbed) run.absorbed = r.absorbed.map((x) => x.eventKey);
        if (r?.steered) run.steered = r.steered;
      }
    }
    run.given = texts.join('\n');
    out.push(run);
  }
  return out;
}
