import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RunResult } from '../core/types';
import type { WakeAnswer } from './decision';

/** How often a caller looks for a run that has not started yet (a pending coalesced batch). */
const PENDING_POLL_MS = 500;
const MAX_SUPERSEDED_HOPS = 10;

/**
 * The result of the run an answer names: its stored result when it has one; otherwise wait for the
 * run (polling while a coalesced run is still pending in its coalescer, then Temporal's long poll),
 * following a run cancelled for a restart (`supersededBy`) to the run that finally took the event.
 * Rejects as `handle.result()` does (WorkflowFailedError for a failed run). `onWait` is called while
 * waiting (heartbeats); `signal` stops the wait.
 */
export async function awaitRun(client: Client, answer: WakeAnswer, opts: { onWait?: () => void; signal?: AbortSignal } = {}): Promise<RunResult> {
  if (answer.result && !answer.result.supersededBy) return answer.result;
  let workflowId = answer.result?.supersededBy ?? answer.workflowId;
  for (let hop = 0; hop <= MAX_SUPERSEDED_HOPS; hop++) {
    let result: RunResult;
    for (;;) {
      opts.signal?.throwIfAborted();
      try {
        result = (await client.workflow.getHandle(workflowId).result()) as RunResult;
        break;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        opts.onWait?.();
        await new Promise((r) => setTimeout(r, PENDING_POLL_MS));
      }
    }
    if (!result.supersededBy || answer.decision === 'skipped') return result;
    workflowId = result.supersededBy;
  }
  throw new Error(`more than ${MAX_SUPERSEDED_HOPS} restarts from ${answer.workflowId}`);
}
