import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { coalescerQuery, eventQuery } from '../core/messages';
import type { RunResult } from '../core/run-types';
import type { WakeAnswer } from '../core/decision';

/** How often a caller looks for a run that has not started yet (a pending coalesced batch). */
const PENDING_POLL_MS = 500;
const MAX_SUPERSEDED_HOPS = 10;
/** After this many polls with no run under the key named, the caller asks the coalescer where its event went. */
const POLLS_BEFORE_ASKING = 10;

/**
 * The run the event's coalescer now holds it under, when that is not `runKey`: a batch whose start
 * was refused, or one a terminated coalescer held when it was recovered, starts under a new run key
 * (`rekey`), and the key first answered never becomes a run. Undefined while the coalescer names
 * `runKey`, names no run, or cannot be asked. Rejects when the coalescer decided the event `stale`.
 */
export async function movedRun(client: Client, coalescerId: string, eventKey: string, runKey: string): Promise<string | undefined> {
  const now = await client.workflow
    .getHandle(coalescerId)
    .query(eventQuery, { eventKey })
    .catch(() => null);
  // Offered again by a recovery after newer versions had come: nothing will run for it.
  if (now?.decision === 'stale') throw new Error(`${eventKey}: its batch moved and ${coalescerId} then decided it stale; no run will take it`);
  return now?.runKey && now.runKey !== runKey ? now.runKey : undefined;
}

/**
 * Overlap `steer`: the run that holds an event steered into a run that refused it (that run had begun
 * committing, or ended): the follow-up batch or live run its coalescer holds it in, else the run the
 * visibility store lists it on. Undefined while it is in none of them (the refusal on its way).
 */
export async function steeredElsewhere(client: Client, coalescerId: string, eventKey: string): Promise<string | undefined> {
  const state = (
    await client.workflow
      .getHandle(coalescerId)
      .query(coalescerQuery)
      .catch(() => undefined)
  )?.state;
  const holds = (events?: { eventKey: string }[]) => events?.some((e) => e.eventKey === eventKey) === true;
  if (state?.pending && holds(state.pending.events)) return state.pending.runKey;
  if (state?.running && !state.running.steered?.includes(eventKey) && holds(state.running.events)) return state.running.runKey;
  const quoted = `"${eventKey.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  for await (const w of client.workflow.list({ query: `WorkflowType = "runWorkflow" AND WakeAbsorbedEventKeys = ${quoted}`, pageSize: 1 })) return w.workflowId;
  return undefined;
}

/** Whether `result` is of a run an event was steered into and that did not take it (overlap `steer`). */
export function refusedSteer(answer: WakeAnswer, result: RunResult, eventKey: string | undefined): eventKey is string {
  const steered = answer.decision === 'steered' || answer.original === 'steered';
  return steered && eventKey !== undefined && !result.absorbed?.some((e) => e.eventKey === eventKey);
}

/**
 * The result of the run an answer names: its stored result when it has one; otherwise wait for the
 * run (polling while a coalesced run is still pending in its coalescer, then Temporal's long poll),
 * following a run cancelled for a restart (`supersededBy`) to the run that finally took the event,
 * and an event steered into a run that refused it to its follow-up run (`eventKey`: the event's,
 * by default the answer's own when it is a GateAnswer).
 * A run key that never becomes a run (its batch moved to a new key) is left for the one the coalescer
 * names now.
 * Rejects as `handle.result()` does (WorkflowFailedError for a failed run). `onWait` is called while
 * waiting (heartbeats); `signal` stops the wait.
 */
export async function awaitRun(
  client: Client,
  answer: WakeAnswer,
  opts: { onWait?: () => void; signal?: AbortSignal; eventKey?: string } = {},
): Promise<RunResult> {
  const eventKey = opts.eventKey ?? (answer as { eventKey?: string }).eventKey;
  if (answer.result && !answer.result.supersededBy) return answer.result;
  let workflowId = answer.result?.supersededBy ?? answer.runKey;
  for (let hop = 0; hop <= MAX_SUPERSEDED_HOPS; hop++) {
    let result: RunResult;
    for (let polls = 1; ; polls++) {
      opts.signal?.throwIfAborted();
      try {
        result = (await client.workflow.getHandle(workflowId).result()) as RunResult;
        break;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        opts.onWait?.();
        const moved =
          answer.coalescerId && eventKey && polls % POLLS_BEFORE_ASKING === 0 ? await movedRun(client, answer.coalescerId, eventKey, workflowId) : undefined;
        if (moved) workflowId = moved;
        else await new Promise((r) => setTimeout(r, PENDING_POLL_MS));
      }
    }
    if (refusedSteer(answer, result, eventKey)) {
      const next = await steeredElsewhere(client, answer.coalescerId!, eventKey);
      if (next === undefined || next === workflowId) {
        opts.onWait?.();
        await new Promise((r) => setTimeout(r, PENDING_POLL_MS));
      } else workflowId = next;
      hop -= 1; // not a restart: the wait for the follow-up run is not bounded by the restart hops
      continue;
    }
    if (!result.supersededBy || answer.decision === 'skipped') return result;
    workflowId = result.supersededBy;
  }
  throw new Error(`more than ${MAX_SUPERSEDED_HOPS} restarts from ${answer.runKey}`);
}
