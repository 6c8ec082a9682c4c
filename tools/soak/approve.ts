import { approveSignal, statusQuery } from '../../src/core/messages';
import type { Topology } from './topology';

/** Approve every irreversible effect a run of the task queue waits on, as the person on call would. */
export async function approveWaiting(top: Topology): Promise<number> {
  let approved = 0;
  const client = top.client();
  for await (const info of client.workflow.list({ query: `WorkflowType = "runWorkflow" AND TaskQueue = "${top.taskQueue}" AND ExecutionStatus = "Running"` })) {
    const handle = client.workflow.getHandle(info.workflowId, info.runId);
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (!status?.awaitingApproval) continue;
    await handle.signal(approveSignal, { who: 'soak', reason: 'the soak approves every export', effectKey: status.awaitingApproval.effectKey });
    approved++;
  }
  return approved;
}

/** Approve what waits every 2 s until stopped, as the person on call would; `stop` returns how many were approved. */
export function startApprover(top: Topology): { stop(): Promise<number> } {
  let approving = true;
  let approvals = 0;
  const loop = (async () => {
    while (approving) {
      approvals += await approveWaiting(top).catch(() => 0);
      await new Promise((r) => setTimeout(r, 2000));
    }
  })();
  return {
    async stop() {
      approving = false;
      await loop;
      return approvals;
    },
  };
}
