import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import type { CommitInput } from '../core/contracts';
import { nextSlots, type EffectBegun, type EffectSlot } from '../core/effect-slots';
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
      if (begun) begun.rejected = once && failureType(a.failure) === FailureType.ProviderRejected;
    } else if (e.activityTaskCompletedEventAttributes) {
      const begun = bySchedule.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId));
      if (begun) begun.rejected = false;
    }
  }
  return { ...(input ? { input } : {}), begun: [...byKey.values()] };
}

/** What the next execution of a logical run carries from its latest one: its slots' keys, and the latest's input. */
export async function carriedFrom(client: Client, workflowId: string, runId: string): Promise<ExecutionRead & { slots: EffectSlot[] }> {
  const read = await readExecution(client, workflowId, runId);
  return { ...read, slots: nextSlots(read.input?.replay?.effects, read.begun) };
}
