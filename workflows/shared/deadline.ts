import { workflowNow } from './clock';

/**
 * A run's wall-clock deadline without a timer (a timer is a billed action): every wait of
 * the run is bounded by the deadline itself (an activity's schedule-to-close, a child's execution
 * timeout, a retry's sleep, an approval's wait), and a step whose time is gone is not scheduled: it
 * throws this, which the agent loop (workflows/run/agent-loop.ts) turns into `budget_exhausted` on
 * `wallClockMs`.
 */
export class DeadlinePassed extends Error {
  constructor() {
    super('the wall-clock budget is spent');
    this.name = 'DeadlinePassed';
  }
}

/** What is left before `deadlineMs` (undefined: no deadline, unbounded); throws {@link DeadlinePassed} when nothing is. */
export function timeLeftMs(deadlineMs: number | undefined): number | undefined {
  if (deadlineMs === undefined) return undefined;
  const left = deadlineMs - workflowNow();
  if (left <= 0) throw new DeadlinePassed();
  return left;
}
