import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RunEnded, RunTook, SteerAnswer } from '../../src/core/coalesce-types';
import { statusQuery } from '../../src/core/messages';
import type { RunInput, RunResult } from '../../src/core/run-types';
import { runEndOf } from '../../src/core/run-end';
import { inputAndResult, recordedHistory } from '../../src/trail/history-read';

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
 * follow-up run); one closed otherwise its current execution's history: its input (a run continued
 * as new, or reset, keeps its batch) and the events its steer updates accepted, counted as its own.
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
  // Not caught: a run that cannot answer yet is read again (the activity is retried), never taken for its input alone.
  if (described.status.name === 'RUNNING') {
    const status = await handle.query(statusQuery);
    if (status.absorbed) return { took: keys(status.absorbed), steered: status.steered ?? [] };
  } else if (described.status.name === 'COMPLETED') {
    const r = (await handle.result()) as RunResult;
    const unseen = keys(r.unseenEvents);
    if (r.absorbed) return { took: [...keys(r.absorbed), ...unseen], steered: [...(r.steered ?? []), ...unseen] };
  }
  // Failed, terminated, timed out: its input, and the events its steer updates accepted (its history).
  // Those are counted as its own, not as steered: its end, known from Temporal alone, cannot say which
  // its model saw, and one it saw must not run again in a follow-up run.
  const events = await recordedHistory(client, await handle.fetchHistory());
  const input = inputAndResult(events).input as RunInput | undefined;
  const steers = new Set(events.flatMap((e) => (e.kind === 'update' && e.name === 'steer' ? [e.id] : [])));
  const steered = events.flatMap((e) => (e.kind === 'update-done' && steers.has(e.id) ? ((e.result as SteerAnswer | undefined)?.accepted ?? []) : []));
  const origin = input?.origin;
  const batch = origin?.kind === 'batch' ? keys(origin.absorbed) : input?.eventKey ? [input.eventKey] : [];
  return { took: [...batch, ...steered.filter((k) => !batch.includes(k))], steered: [] };
}
