import { createHash, randomUUID } from 'node:crypto';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { InternalWorkflowStartOptionsSymbol } from '@temporalio/client/lib/internal';
import type { ReplayOf, RunInput } from '../core/run-types';
import { startIndex } from '../core/run-index';
import type { runWorkflow } from '../../workflows/run/workflow';

/**
 * The start request ID of an execution again of a logical run (a replay, a restart on a
 * redelivery): one per (run key, epoch), the same in every process. Temporal answers a start whose
 * request ID is its current execution's with that execution, open or closed, instead of starting
 * another: two processes that both read the same failed execution and both start its successor
 * start one. Set through the client's internal start options: the public options take no request ID.
 */
function againRequestId(runKey: string, epoch: string): { [InternalWorkflowStartOptionsSymbol]: { requestId: string } } {
  const digest = createHash('sha256').update(`${runKey}\u0000${epoch}`).digest('hex').slice(0, 32);
  return { [InternalWorkflowStartOptionsSymbol]: { requestId: `wakegate-again-${digest}` } };
}

/**
 * Start an execution again of a logical run under its own workflow ID (conflict FAIL: one open at a
 * time), with one request ID per (run, epoch). Returns the execution the server answered with and
 * whether this call started it (its memo's `replayBy`), or another caller's start of the same epoch
 * did. A start refused because an execution is open throws WorkflowExecutionAlreadyStartedError.
 */
export async function startAgain(
  client: Client,
  taskQueue: string,
  input: RunInput & { replay: ReplayOf },
  reuse: 'ALLOW_DUPLICATE' | 'ALLOW_DUPLICATE_FAILED_ONLY',
): Promise<{ execution: WorkflowExecutionDescription; mine: boolean }> {
  const mine = randomUUID();
  const handle = await client.workflow.start<typeof runWorkflow>('runWorkflow', {
    workflowId: input.runKey,
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'FAIL',
    workflowIdReusePolicy: reuse,
    typedSearchAttributes: startIndex(input),
    memo: { fingerprint: input.fingerprint, replayEpoch: input.replay.epoch, replayBy: mine },
    ...againRequestId(input.runKey, input.replay.epoch),
  });
  const execution = await client.workflow.getHandle(input.runKey, handle.firstExecutionRunId).describe();
  return { execution, mine: execution.memo?.replayBy === mine };
}
