import type { Client } from '@temporalio/client';
import type { SupervisorPolicy } from '../../src/core/supervisor-types';
import { withSupervisorPolicy } from '../../src/supervisor/policy';

/**
 * The supervisor a benchmark runs with: its storm threshold and fleet cap out of the way (a benchmark
 * is a storm by the default policy, and the default cap, 1,000 wakes an hour, would hold its later
 * runs before their first step), while every run still takes its permit at its first step.
 */
export function benchSupervisorPolicy(bench: string, load: string): SupervisorPolicy {
  return withSupervisorPolicy({
    storm: { fleetPerMinute: 1_000_000, agentPerMinute: 1_000_000, rationale: `${bench} ${load} on purpose: not a storm here.` },
    caps: { fleet: [{ windowMs: 3_600_000, wakes: 1_000_000, rationale: `${bench}: a cap every run takes a permit from, never reached.` }], agents: {} },
  });
}

/**
 * Until no run on these task queues is open (visibility), so that a series starts on idle workers: a
 * backlog of runs left by the series before it would measure the order of the series, not the path.
 */
export async function untilNoOpenRuns(client: Client, taskQueues: string[]): Promise<void> {
  const query = `WorkflowType = 'runWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue IN (${taskQueues.map((q) => `'${q}'`).join(', ')})`;
  while ((await client.workflow.count(query)).count > 0) await new Promise((r) => setTimeout(r, 250));
}
