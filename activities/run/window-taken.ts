import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { WindowCheck, WindowTaken } from '../../src/core/schedule-types';
import { WakeTerminalReason } from '../../src/core/search-attributes';

/** Outcomes of a window's run that leave the window free: it did not run the agent, or it may run again. */
const LEAVES_WINDOW_FREE = new Set(['duplicate', 'skipped']);

/** The window's run this execution stands for, if it took the window (see windowTaken). */
function takenBy(wf: Omit<WorkflowExecutionInfo, 'raw'>): WindowTaken | undefined {
  const status = wf.status.name;
  const terminalReason = wf.typedSearchAttributes.get(WakeTerminalReason);
  const taken = status === 'RUNNING' || (status === 'COMPLETED' && !LEAVES_WINDOW_FREE.has(terminalReason ?? ''));
  if (!taken) return undefined;
  const fingerprint = wf.memo?.fingerprint;
  return {
    workflowId: wf.workflowId,
    runId: wf.runId,
    status,
    ...(terminalReason ? { terminalReason } : {}),
    ...(typeof fingerprint === 'string' ? { fingerprint } : {}),
  };
}

/**
 * Whether a schedule's window has already been taken, for a run its Schedule started directly (the
 * run's first step asks, see activities/run/run.ts). Temporal starts a scheduled fire with
 * REJECT_DUPLICATE, so the Schedule never runs a window's ID twice by itself; a manual trigger or a
 * backfill it starts with ALLOW_DUPLICATE, over an earlier run of the same ID that has closed. So the
 * earlier executions of this very workflow ID (the gate names a window emitted as an event the same)
 * are listed from visibility, each one then described by run ID (visibility may still say Running,
 * or list a run `wakegate rearm` deleted). SQL visibility is written as a run closes; on
 * Elasticsearch a run closed within the refresh interval (about a second) may not be listed yet.
 * An open run, or one that completed having run its window, takes it (a cancelled run completes
 * `cancelled`: its window is answered, not run again). One that failed, was terminated or timed out
 * leaves it free, as on the gate's path, and so does one that ended `duplicate` or `skipped`.
 */
export async function windowTaken(client: Client, { workflowId, runId }: WindowCheck): Promise<WindowTaken | undefined> {
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    if (wf.runId === runId) continue;
    // Visibility lists; the run's own record says how it stands (visibility may lag a close or a deletion).
    let run;
    try {
      run = await client.workflow.getHandle(workflowId, wf.runId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) continue; // deleted (`wakegate rearm`)
      throw err;
    }
    const taken = takenBy(run);
    if (taken) return taken;
  }
  return undefined;
}
