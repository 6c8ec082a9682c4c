import {
  isGrpcDeadlineError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import type { CoalescePolicy } from '../core/policy';
import type { admissionWorkflow } from '../workflows/coalesce/admission';
import type { AdmissionInput, AdmissionResult } from '../core/coalesce-types';
import { coalescerId } from '../core/ids';
import type { RunInput, RunResult } from '../core/types';
import type { WakeAnswer } from './decision';
import { refusedSteer, steeredElsewhere } from './await-run';
import { mismatch } from './one-call';
import type { PathContext } from './path-context';
import { currentTraceparent } from '../tracing/spans';

const MAX_ROUNDS = 5;
/** A restarted run (overlap `cancel`) names its successor; follow at most this many. */
const MAX_SUPERSEDED_HOPS = 10;

/** The admission record's input for one agent's wake of one event (with tracing on, the active span's `traceparent` on the event). */
export function admissionInput(input: RunInput, policy: CoalescePolicy): AdmissionInput {
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
    },
  };
}

/** The answer to the delivery that created the admission record: the coalescer's decision. */
function firstAnswer(base: WakeAnswer, r: AdmissionResult): WakeAnswer {
  return {
    ...base,
    decision: r.decision,
    workflowId: r.runKey ?? base.workflowId,
    coalescerId: r.coalescerId,
    ...(r.runState ? { runState: r.runState } : {}),
    ...(r.startsInMs !== undefined ? { startsInMs: r.startsInMs } : {}),
    ...(r.newestVersion !== undefined ? { newestVersion: r.newestVersion } : {}),
    ...(r.decision === 'mismatch'
      ? {
          message: `event key ${r.eventKey} is already held by ${r.runKey} with different inputs (fingerprint); nothing was taken. Use a new key for a different event, or send the original inputs.`,
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
async function redeliveryAnswer(ctx: PathContext, input: RunInput, base: WakeAnswer, r: AdmissionResult): Promise<WakeAnswer> {
  const answer = { ...firstAnswer(base, r), original: r.decision };
  if (r.decision === 'mismatch') return answer;
  if (r.decision === 'stale' || !r.runKey) return { ...answer, decision: 'stale' };
  let runKey = r.runKey;
  for (let hop = 0; hop <= MAX_SUPERSEDED_HOPS; hop++) {
    let desc: WorkflowExecutionDescription;
    try {
      desc = await ctx.client.workflow.getHandle(runKey).describe();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      // Not started yet: the event waits in its coalescer's pending batch.
      if (input.deliveryId) await ctx.deliveries.record(r.coalescerId, undefined, input.deliveryId, input.eventKey).catch(() => undefined);
      return { ...answer, decision: 'in_progress', workflowId: runKey, runState: 'pending' };
    }
    if (desc.status.name === 'RUNNING') {
      if (input.deliveryId && r.decision !== 'skipped') {
        // Its current run (no run id): a held run may have continued as new since the describe.
        await ctx.deliveries.record(runKey, undefined, input.deliveryId, input.eventKey).catch(() => undefined);
      }
      return { ...answer, decision: 'in_progress', workflowId: runKey, runId: desc.runId, runState: 'running' };
    }
    if (desc.status.name !== 'COMPLETED') {
      return {
        ...answer,
        decision: 'completed',
        workflowId: runKey,
        runId: desc.runId,
        message: `the run ${runKey} that took this event ended ${desc.status.name.toLowerCase()}; \`wakegate rearm ${base.admissionId}\` lets the event be admitted again`,
      };
    }
    const result = (await ctx.client.workflow.getHandle(runKey, desc.runId).result()) as RunResult;
    if (refusedSteer(answer, result, input.eventKey)) {
      // Steered into a run that had begun committing: the follow-up run took it, or will.
      const next = await steeredElsewhere(ctx.client, r.coalescerId, input.eventKey);
      if (next === undefined || next === runKey) return { ...answer, decision: 'in_progress', workflowId: runKey, runState: 'pending' };
      runKey = next;
      continue;
    }
    if (result.supersededBy && r.decision !== 'skipped') {
      runKey = result.supersededBy;
      continue;
    }
    return { ...answer, decision: 'completed', workflowId: runKey, runId: desc.runId, result };
  }
  throw new Error(`gate: more than ${MAX_SUPERSEDED_HOPS} restarts from ${r.runKey}; answer from the coalescer (\`wakegate coalescer\`)`);
}

/**
 * The coalescing path: one admission record per (agent, event), started with the same ID policies
 * as a run on the one-call path (so Temporal still refuses the duplicate event), which offers the
 * event to the agent's coalescer for its wake key and completes with the decision. The caller waits
 * for that decision up to `decisionWaitMs`; past it (no worker polling) the event is still durably
 * recorded, and the delivery is answered `accepted`.
 */
export async function admitCoalesced(ctx: PathContext, input: RunInput, policy: CoalescePolicy): Promise<WakeAnswer> {
  const { client, taskQueue } = ctx;
  const admissionId = input.runKey;
  const base: WakeAnswer = {
    decision: 'accepted',
    agent: input.agent,
    wakeKey: input.wakeKey,
    workflowId: admissionId,
    admissionId,
    coalescerId: coalescerId(input.agent, input.wakeKey),
  };
  const decided = async (handle: WorkflowHandle, first: boolean): Promise<WakeAnswer | undefined> => {
    let r: AdmissionResult;
    const deadline = Date.now() + ctx.decisionWaitMs;
    try {
      // A deadline on the long poll itself, so nothing keeps polling once the caller has its answer.
      r = (await client.withDeadline(deadline, () => handle.result())) as AdmissionResult;
    } catch (err) {
      if (err instanceof WorkflowFailedError) return undefined; // the record failed: the reuse policy admits it again
      // Past the deadline the poll ends as DEADLINE_EXCEEDED or, mid-retry, CANCELLED: either way undecided yet.
      if (isGrpcDeadlineError(err) || Date.now() >= deadline) return { ...base, decision: first ? 'accepted' : 'in_progress', runState: 'pending' };
      throw err;
    }
    return first ? firstAnswer(base, r) : redeliveryAnswer(ctx, input, base, r);
  };

  for (let round = 0; round < MAX_ROUNDS; round++) {
    try {
      const handle = await client.workflow.start<typeof admissionWorkflow>('admissionWorkflow', {
        workflowId: admissionId,
        taskQueue,
        args: [admissionInput(input, policy)],
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        memo: { fingerprint: input.fingerprint },
      });
      const answer = await decided(handle, true);
      if (answer) return answer;
      continue;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    let desc: WorkflowExecutionDescription;
    try {
      desc = await client.workflow.getHandle(admissionId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) continue;
      throw err;
    }
    const stored = desc.memo?.fingerprint;
    if (typeof stored === 'string' && stored !== input.fingerprint) return mismatch(input, stored, base, desc.runId);
    if (desc.status.name !== 'RUNNING' && desc.status.name !== 'COMPLETED') continue; // failed: admit again
    const answer = await decided(client.workflow.getHandle(admissionId, desc.runId), false);
    if (answer) return answer;
  }
  throw new Error(`gate: ${admissionId} changed state ${MAX_ROUNDS} times while answering; try again`);
}
