import { createHash } from 'node:crypto';
import { InternalWorkflowStartOptionsSymbol } from '@temporalio/client/lib/internal';

/**
 * The start request ID of an execution again of a logical run (a replay, a restart on a
 * redelivery): one per (run key, epoch), the same in every process. Temporal answers a start whose
 * request ID is its current execution's with that execution, open or closed, instead of starting
 * another: two processes that both read the same failed execution and both start its successor
 * start one. Set through the client's internal start options: the public options take no request ID.
 */
export function againRequestId(runKey: string, epoch: string): { [InternalWorkflowStartOptionsSymbol]: { requestId: string } } {
  const digest = createHash('sha256').update(`${runKey}\u0000${epoch}`).digest('hex').slice(0, 32);
  return { [InternalWorkflowStartOptionsSymbol]: { requestId: `wakegate-again-${digest}` } };
}
