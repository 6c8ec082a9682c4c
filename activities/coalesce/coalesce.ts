import { getClient } from '@temporalio/activity';
import type { CoalesceActivities } from '../../core/contracts';
import { steerRun } from './steer';

/** Activities of the coalescing path. */
export function createCoalesceActivities(): CoalesceActivities {
  return {
    /** Overlap `steer`: the coalescer's events for its live run, by update (activities/coalesce/steer.ts). */
    async steerRun(input) {
      return steerRun(getClient(), input);
    },
  };
}
