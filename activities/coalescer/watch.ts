import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RunEnded } from '../../src/core/coalesce-types';
import type { RunResult } from '../../src/core/run-types';
import { runEndOf } from '../../src/core/run-end';

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
