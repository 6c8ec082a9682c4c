import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RunEnded, RunTook } from '../../src/core/coalesce-types';
import { statusQuery } from '../../src/core/messages';
import type { RunInput, RunResult } from '../../src/core/run-types';
import { runEndOf } from '../../src/core/run-end';
import { first } from '../../src/trail/history-read';

/**
 * The end of a coalesced run as Temporal records it (its current execution: a run reset by hand is
 * its new execution), or null while it is open, with the same facts its result gives the coalescer
 * that started it (src/core/run-end.ts). A run tells a coalescer it ended by signal only when asked
 * (its coalescer continued as new, or a new chain adopted it); one terminated or timed out by hand
 * sends nothing, and a coalescer reset by hand, or one after a continue-as-new, is not its parent:
 * this is how the coalescer learns of those ends (workflows/coalescer/workflow.ts).
 * A run that closed without a result took nothing its coalescer can count as seen (no `seen`).
 */
export async function runEnd(client: Client, runKey: string): Promise<RunEnded | null> {
  const handle = client.workflow.getHandle(runKey);
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    return { runKey, terminalReason: 'failed' }; // deleted by hand (rearm): it will not report
  }
  if (status === 'RUNNING') return null;
  if (status === 'COMPLETED') {
    const r = (await handle.result()) as RunResult;
    return runEndOf(runKey, r);
  }
  return { runKey, terminalReason: status === 'CANCELLED' ? 'cancelled' : 'failed' };
}

/**
 * The events a coalesced run took, by key: its batch and the events steered into it (`steered`,
 * those among them), or null when no run has the ID. Asked by a coalescer whose start met a run
 * under the same ID: only a coalescer reset by hand meets one, the run its discarded branch started
 * (workflows/coalescer/by-hand.ts `metTaken`). An open run answers its `status` query; a completed
 * one its result (the steered events its model never saw among them: its end sends those to a
 * follow-up run); one closed otherwise, or that cannot answer, its input, the first event of its
 * current execution's history (a run continued as new, or reset, keeps its batch).
 */
export async function runTook(client: Client, runKey: string): Promise<RunTook | null> {
  let described;
  try {
    described = await client.workflow.getHandle(runKey).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null; // deleted by hand meanwhile (rearm)
    throw err;
  }
  const { runId } = described;
  const handle = client.workflow.getHandle(runKey, runId);
  const keys = (events: readonly { eventKey: string }[] | undefined) => (events ?? []).map((e) => e.eventKey);
  if (described.status.name === 'RUNNING') {
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (status?.absorbed) return { took: keys(status.absorbed), steered: status.steered ?? [] };
  } else if (described.status.name === 'COMPLETED') {
    const r = (await handle.result()) as RunResult;
    const unseen = keys(r.unseenEvents);
    if (r.absorbed) return { took: [...keys(r.absorbed), ...unseen], steered: [...(r.steered ?? []), ...unseen] };
  }
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId: runKey, runId },
    maximumPageSize: 1,
  });
  const input = (await first(client, page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input)) as RunInput | undefined;
  const origin = input?.origin;
  if (origin?.kind === 'batch') return { took: keys(origin.absorbed), steered: [] };
  return { took: input?.eventKey ? [input.eventKey] : [], steered: [] };
}
