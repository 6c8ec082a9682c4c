import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import type { RunInput, RunResult } from '../core/run-types';
import type { runWorkflow } from '../../workflows/run/workflow';
import type { WakeAnswer } from '../core/decision';
import type { PathContext } from './path-context';
import { carriedFrom } from '../commit/executions';
import { startAgain } from './again-request';
import { startIndex } from '../core/run-index';

// Another caller can close the run between our start and our describe; a few rounds settle it.
const MAX_ROUNDS = 5;

/** The `mismatch` answer: the key was already used with other inputs; nothing was started. */
export function mismatch(input: RunInput, stored: string, base: WakeAnswer, runId: string): WakeAnswer {
  return {
    ...base,
    decision: 'mismatch',
    runId,
    message:
      `event key ${input.eventKey} was already used with different inputs (fingerprint ${stored.slice(0, 12)}…, ` +
      `this delivery ${input.fingerprint.slice(0, 12)}…); nothing was started. Use a new key (entity, type or time) ` +
      `for a different event, or send the original inputs.`,
  };
}

/**
 * The one-call path, for an agent that does not coalesce: one Temporal start of the run with
 * workflow ID `agent@eventKey`, or the name its trigger gives runs (`runKey`) (conflict FAIL: no
 * second open run; reuse REJECT_DUPLICATE: no start over a closed one). Only a duplicate pays for a
 * second call, to answer it from the latest execution of that ID: open → `in_progress` (its delivery
 * id recorded on the run), completed → its stored result (a replay's, when a replay ran it last), a
 * different fingerprint → `mismatch`; failed, timed out or terminated → the run starts again as an
 * execution again of the same logical run ({@link restart}).
 */
export async function admitOneCall(ctx: PathContext, input: RunInput): Promise<WakeAnswer> {
  const { client, taskQueue } = ctx;
  const base: WakeAnswer = { decision: 'started', agent: input.agent, wakeKey: input.wakeKey, runKey: input.runKey };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    try {
      const handle = await client.workflow.start<typeof runWorkflow>('runWorkflow', {
        workflowId: input.runKey,
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // The run's index comes with its start: an upsert in its first workflow task would be one
        // more billed action per wake; the start's write is a little heavier (bench:gate).
        typedSearchAttributes: startIndex(input),
        memo: { fingerprint: input.fingerprint },
      });
      return { ...base, decision: 'started', runId: handle.firstExecutionRunId };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }

    const answer = await answerFromRun(ctx, input, base);
    if (answer && answer !== RETRY) return answer;
  }
  throw new Error(`gate: ${input.runKey} changed state ${MAX_ROUNDS} times while answering; try again`);
}

/**
 * Answer a delivery from the run that holds its event (a failed one is started again); RETRY when that
 * run closed meanwhile, undefined when there is none (deleted since the start was refused).
 */
const RETRY = 'retry' as const;
async function answerFromRun(ctx: PathContext, input: RunInput, base: WakeAnswer): Promise<WakeAnswer | typeof RETRY | undefined> {
  const { client } = ctx;
  const workflowId = input.runKey;
  let desc: WorkflowExecutionDescription;
  try {
    desc = await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  const stored = desc.memo?.fingerprint;
  if (typeof stored === 'string' && stored !== input.fingerprint) return mismatch(input, stored, base, desc.runId);
  switch (desc.status.name) {
    case 'RUNNING':
      if (input.deliveryId) {
        try {
          await ctx.deliveries.record(workflowId, desc.runId, input.deliveryId);
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return RETRY; // closed meanwhile: answer from its outcome
          throw err;
        }
      }
      return { ...base, decision: 'in_progress', runId: desc.runId };
    case 'COMPLETED': {
      const result = (await client.workflow.getHandle(workflowId, desc.runId).result()) as RunResult;
      return { ...base, decision: 'completed', runId: desc.runId, result };
    }
    default:
      // Failed, timed out, terminated: the event runs again, carrying what the failed execution began.
      return restart(ctx, input, base, desc.runId);
  }
}

/**
 * A delivery of an event whose run failed (or timed out, or was terminated) starts it again under
 * the same workflow ID: Temporal keeps one execution open, so a restart and a replay never run side
 * by side. Its effects take the keys the failed execution (and each before it) gave them, read from
 * that execution's own history (src/commit/executions.ts): a `reconcile` effect finds what landed, a
 * `provider_key` effect's provider deduplicates. RETRY when another caller restarted it first.
 */
async function restart(ctx: PathContext, input: RunInput, base: WakeAnswer, failedRunId: string): Promise<WakeAnswer | typeof RETRY> {
  const carried = await carriedFrom(ctx.client, input.runKey, failedRunId);
  const events = carried.input?.replay?.events;
  const replay = { epoch: `after:${failedRunId}`, of: input.runKey, by: 'redelivery' as const, effects: carried.slots, ...(events ? { events } : {}) };
  try {
    // Two redeliveries that read the same failed execution start one successor, whatever comes
    // between; the one that did not start it answers from it.
    const { execution, mine } = await startAgain(ctx.client, ctx.taskQueue, { ...input, replay }, 'ALLOW_DUPLICATE_FAILED_ONLY');
    if (!mine) return RETRY;
    return { ...base, decision: 'started', runId: execution.runId };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return RETRY;
    throw err;
  }
}
