import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import type { CommitInput } from '../core/contracts';
import { slotsAcross, type EffectBegun, type EffectSlot } from '../core/effect-slots';
import { FailureType } from '../core/failures';
import type { RunInput } from '../core/run-types';

type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
type Failure = temporal.api.failure.v1.IFailure | null | undefined;

async function first(client: Client, payloads: Payloads): Promise<unknown> {
  if (!payloads?.payloads?.length) return undefined;
  const [value] = await decodeArrayFromPayloads(client.options.loadedDataConverter, payloads.payloads);
  return value;
}

function failureType(f: Failure): string | undefined {
  let cur = f;
  while (cur?.cause) cur = cur.cause;
  return cur?.applicationFailureInfo?.type ?? f?.applicationFailureInfo?.type ?? undefined;
}

/** One execution of a logical run as the commit stage reads it: its input and the effects it began, in order. */
export interface ExecutionRead {
  input?: RunInput;
  begun: EffectBegun[];
  /** The run this execution was reset from (the Web UI's or the CLI's reset), read from its history. */
  resetFrom?: string;
}

/**
 * Read one execution (workflow ID and run ID: never a look-up in visibility, which may not list an
 * execution that closed a moment ago): its input, and each effect it began once, `rejected` when the
 * provider refused it outright: its one attempt failed `ProviderRejected`. An effect retried (its
 * last attempt past the first), completed, or still scheduled when the execution closed may have
 * landed, and is not.
 */
export async function readExecution(client: Client, workflowId: string, runId: string): Promise<ExecutionRead> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  let input: RunInput | undefined;
  let resetFrom: string | undefined;
  const bySchedule = new Map<string, EffectBegun>();
  const byKey = new Map<string, EffectBegun>();
  const attempts = new Map<string, number>();
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (e.workflowExecutionStartedEventAttributes) {
      input = (await first(client, e.workflowExecutionStartedEventAttributes.input)) as RunInput | undefined;
    } else if (scheduled?.activityType?.name === 'commitEffect') {
      const c = (await first(client, scheduled.input)) as CommitInput;
      const begun = byKey.get(c.effectKey) ?? { effect: c.effect.name, effectKey: c.effectKey, rejected: false };
      byKey.set(c.effectKey, begun);
      bySchedule.set(String(e.eventId), begun);
    } else if (e.activityTaskStartedEventAttributes) {
      const a = e.activityTaskStartedEventAttributes;
      attempts.set(String(a.scheduledEventId), a.attempt ?? 1);
    } else if (e.activityTaskFailedEventAttributes) {
      const a = e.activityTaskFailedEventAttributes;
      const begun = bySchedule.get(String(a.scheduledEventId));
      const once = (attempts.get(String(a.scheduledEventId)) ?? 1) === 1;
      const type = failureType(a.failure);
      // Refused before anything was done (an execution reset past its start): the key was never begun.
      if (begun && type === FailureType.ResetPastStart) byKey.delete(begun.effectKey);
      else if (begun) begun.rejected = once && type === FailureType.ProviderRejected;
    } else if (e.workflowTaskFailedEventAttributes?.baseRunId && e.workflowTaskFailedEventAttributes.newRunId === runId) {
      resetFrom = e.workflowTaskFailedEventAttributes.baseRunId;
    } else if (e.activityTaskCompletedEventAttributes) {
      const begun = bySchedule.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId));
      if (begun) begun.rejected = false;
    }
  }
  return { ...(input ? { input } : {}), begun: [...byKey.values()], ...(resetFrom ? { resetFrom } : {}) };
}

/**
 * The run IDs of the other executions of a logical run: those its reset chain names, read from the
 * histories (strongly consistent: a run reset a moment ago is there), and those visibility lists
 * under its workflow ID (a reset of an older execution than the latest, a restart before it).
 */
async function otherRuns(client: Client, workflowId: string, resetFrom: string | undefined, runId: string): Promise<string[]> {
  const seen = new Set([runId]);
  const runs: string[] = [];
  for (let from = resetFrom; from && !seen.has(from);) {
    seen.add(from);
    runs.push(from);
    from = (await readExecution(client, workflowId, from)).resetFrom;
  }
  const query = `WorkflowId = ${JSON.stringify(workflowId)}`;
  for await (const w of client.workflow.list({ query })) {
    if (!seen.has(w.runId)) runs.push(w.runId);
    seen.add(w.runId);
  }
  return runs;
}

/**
 * What the next execution of a logical run carries from its latest one: its slots' keys, and the
 * latest's input. The slots are the latest's, with a key any other execution of the run began and
 * may have landed pinned in its slot (src/core/effect-slots.ts `slotsAcross`).
 */
export async function carriedFrom(client: Client, workflowId: string, runId: string): Promise<ExecutionRead & { slots: EffectSlot[] }> {
  const read = await readExecution(client, workflowId, runId);
  const earlier = await beganElsewhere(client, workflowId, read.resetFrom, runId);
  return { ...read, slots: slotsAcross(read.input?.replay?.effects, read.begun, earlier) };
}

const beganElsewhere = async (client: Client, workflowId: string, resetFrom: string | undefined, runId: string): Promise<EffectBegun[][]> =>
  Promise.all((await otherRuns(client, workflowId, resetFrom, runId)).map(async (r) => (await readExecution(client, workflowId, r)).begun));

/**
 * The slots of an execution reset from the Web UI or the CLI, read at its start (its run ID is not
 * the one its start event records): the slots its input carried, with every key another execution
 * of the run began and may have landed pinned. Its input is the input of the execution it was reset
 * from, which may be older than the latest: a reset of the first execution of a run whose replay
 * landed a ticket under a moved key would otherwise file it again under the first key.
 */
export async function slotsAfterReset(client: Client, workflowId: string, runId: string, carried: EffectSlot[] | undefined): Promise<EffectSlot[]> {
  const own = await readExecution(client, workflowId, runId);
  return slotsAcross(carried, [], await beganElsewhere(client, workflowId, own.resetFrom, runId));
}
