import { proxyActivities } from '@temporalio/workflow';

const { bareActivity } = proxyActivities<{ bareActivity(): Promise<void> }>({ startToCloseTimeout: '30 seconds' });

/** The baseline: a bare workflow a bare Temporal Schedule starts, with one activity. */
export async function bareWorkflow(): Promise<void> {
  await bareActivity();
}
