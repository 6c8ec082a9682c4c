import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../src/core/contracts';

const acts = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds' });

/** The benchmark's baseline: the same activities the run makes, as bare calls, with no run machinery. */
export async function bareWorkflow(steps: { name: 'prepareRun' | 'toolCall' | 'modelTurn' | 'commitEffect'; arg: unknown }[]): Promise<number> {
  for (const s of steps) await (acts[s.name] as (a: unknown) => Promise<unknown>)(s.arg);
  return steps.length;
}

/**
 * prepareRun asks the supervisor of its task queue for a permit, as a run's first step does; the
 * bare series' queue has its supervisor too, so both series pay that step alike.
 */
export { supervisorWorkflow } from '../../workflows/supervisor/workflow';
