import type { Client } from '@temporalio/client';
import { WakeAgent, WakeTerminalReason, WakeVersion } from '../../src/core/search-attributes';
import { unique } from './env';

/**
 * A closed run of `agent` on `version` that ended `reason`, as visibility lists it for a rollout's
 * evidence: a runWorkflow execution that never ran (a start delay), carrying the search attributes
 * a finished run records, terminated.
 */
export async function closedRun(client: Client, taskQueue: string, agent: string, version: string, reason = 'success'): Promise<void> {
  const handle = await client.workflow.start('runWorkflow', {
    workflowId: unique(`stand-in-${version}`),
    taskQueue,
    args: [{}],
    startDelay: '1 hour',
    typedSearchAttributes: [
      { key: WakeAgent, value: agent },
      { key: WakeVersion, value: version },
      { key: WakeTerminalReason, value: reason },
    ],
  });
  await handle.terminate('a stand-in for a closed run');
}
