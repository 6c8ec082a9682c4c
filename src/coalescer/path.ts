import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { CoalescePolicy } from '../core/policy';
import type { OfferAnswer, OfferInput } from '../core/coalesce-types';
import { coalescerId } from '../core/ids';
import type { RunInput, RunResult } from '../core/run-types';
import type { WakeAnswer } from '../core/decision';
import { refusedSteer, steeredElsewhere } from '../run/await-run';
import type { DeliveryQueue } from '../run/delivery-queue';
import type { OfferQueue } from './offer-queue';
import { currentTraceparent } from '../tracing/spans';

/** What the coalescing path takes from the gate: the client, the offer queue, the delivery queue, how long to wait for a decision. */
export interface CoalescePathContext {
  client: Client;
  offers: OfferQueue;
  deliveries: DeliveryQueue;
  /** How long a delivery waits for its coalescer's decision before it is taken by signal and answered `accepted`, ms. */
  decisionWaitMs: number;
}

/** A restarted run (overlap `cancel`) names its successor; follow at most this many. */
const MAX_SUPERSEDED_HOPS = 10;

/** The offer of one agent's wake of one event to its coalescer (with tracing on, the active span's `traceparent` on the event). */
export function offerInput(input: RunInput, policy: CoalescePolicy): OfferInput {
  const traceparent = currentTraceparent();
  return {
    agent: input.agent,
    wakeKey: input.wakeKey,
    coalescerId: coalescerId(input.agent, input.wakeKey),
    policy,
    offer: {
      event: {
        eventKey: input.eventKey,
        source: input.source,
        type: input.type,
        entity: input.entity,
        occurredAt: input.occurredAt,
        bucketStart: input.bucketStart,
        deliveryIds: input.deliveryId ? [input.deliveryId] : [],
        ...(input.version !== undefined ? { version: input.version } : {}),
        payload: input.payload,
        fingerprint: input.fingerprint,
        ...(traceparent ? { traceparent } : {}),
      },
      offerId: randomUUID(),
    },
  };
}

/** The answer to the first delivery of an event: the coalescer's decision. */
function firstAnswer(input: RunInput, base: WakeAnswer, r: OfferAnswer): WakeAnswer {
  return {
    ...base,
    decision: r.decision,
    runKey: r.runKey ?? base.runKey,
    coalescerId: r.coalescerId,
    ...(r.runState ? { runState: r.runState } : {}),
    ...(r.startsInMs !== undefined ? { startsInMs: r.startsInMs } : {}),
    ...(r.newestVersion !== undefined ? { newestVersion: r.newestVersion } : {}),
    ...(r.forgottenEarly ? { forgottenEarly: r.forgottenEarly } : {}),
    ...(r.decision === 'mismatch'
      ? {
          message: `event key ${input.eventKey} was already taken by ${r.runKey ?? r.coalescerId} with different inputs (fingerprint); nothing was taken. Use a new key for a different event, or send the original inputs.`,
        }
      : {}),
  };
}

/**
 * The answer to a later delivery of an event already admitted: whatever became of the run that took
 * it. Pending (not started yet) or running → `in_progress`, with the delivery id recorded where the
 * event is held; finished → `completed` with its stored result (following a restart to the run that
 * finally took the event). `stale` stays `stale`, `mismatch` stays `mismatch`.
 */
async function redeliveryAnswer(ctx: CoalescePathContext, input: RunInput, base: WakeAnswer, r: OfferAnswer): Promise<WakeAnswer> {
  const answer = { ...firstAnswer(input, base, r), original: r.decision };
  if (r.decision === 'mismatch') return answer;
  if (r.decision === 'stale' || !r.runKey) return { ...answer, decision: 'stale' };
  let runKey = r.runKey;
  for (let hop = 0; hop <= MAX_SUPERSEDED_HOPS; hop++) {
    let desc: WorkflowExecutionDescription;
    try {
      desc = await ctx.client.workflow.getHandle(runKey).describe();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      // Not started yet: the event waits in its coalescer's pending batch (which took this delivery's id with the offer).
      return { ...answer, decision: 'in_progress', runKey: runKey, runState: 'pending' };
    }
    if (desc.status.name === 'RUNNING') {
      if (input.deliveryId && r.decision !== 'skipped') {
        // Its current run (no run id): a held run may have continued as new since the describe.
        await ctx.deliveries.record(runKey, undefined, input.deliveryId, input.eventKey).catch(() => undefined);
      }
      return { ...answer, decision: 'in_progress', runKey: runKey, runId: desc.runId, runState: 'running' };
    }
    if (desc.status.name !== 'COMPLETED') {
      return {
        ...answer,
        decision: 'completed',
        runKey: runKey,
        runId: desc.runId,
        message: `the run ${runKey} that took this event ended ${desc.status.name.toLowerCase()}; \`wakegate rearm ${runKey}\` lets its events be admitted again`,
      };
    }
    const result = (await ctx.client.workflow.getHandle(runKey, desc.runId).result()) as RunResult;
    if (refusedSteer(answer, result, input.eventKey)) {
      // Steered into a run that had begun committing: the follow-up run took it, or will.
      const next = await steeredElsewhere(ctx.client, r.coalescerId, input.eventKey);
      if (next === undefined || next === runKey) return { ...answer, decision: 'in_progress', runKey: runKey, runState: 'pending' };
      runKey = next;
      continue;
    }
    if (result.supersededBy && r.decision !== 'skipped') {
      runKey = result.supersededBy;
      continue;
    }
    return { ...answer, decision: 'completed', runKey: runKey, runId: desc.runId, result };
  }
  throw new Error(`gate: more than ${MAX_SUPERSEDED_HOPS} restarts from ${r.runKey}; answer from the coalescer (\`wakegate coalescer\`)`);
}

/**
 * The coalescing path: the event is offered straight to the coalescer of (agent, wake key), sent
 * with this process's other offers to it (src/coalescer/offer-queue.ts), and the delivery is answered with
 * the coalescer's decision. The coalescer deduplicates by event key (for the agent's dedup horizon):
 * a redelivery is answered with what became of the run that took the event, other inputs under a
 * decided key are a `mismatch`. Not decided within `decisionWaitMs` (no worker polling), the offer is
 * taken durably by signal and the delivery is answered `accepted`. About one start's worth of
 * Temporal work per event, shared by the offers of one send: one update with start.
 */
export async function admitCoalesced(ctx: CoalescePathContext, input: RunInput, policy: CoalescePolicy): Promise<WakeAnswer> {
  const id = coalescerId(input.agent, input.wakeKey);
  const base: WakeAnswer = { decision: 'accepted', agent: input.agent, wakeKey: input.wakeKey, runKey: id, coalescerId: id };
  const outcome = await ctx.offers.offer(offerInput(input, policy), ctx.decisionWaitMs);
  if (outcome.kind === 'accepted') return { ...base, runState: 'pending' };
  const r = outcome.answer;
  return r.duplicate && r.decision !== 'mismatch' ? redeliveryAnswer(ctx, input, base, r) : firstAnswer(input, base, r);
}
