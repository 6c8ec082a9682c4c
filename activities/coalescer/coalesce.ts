import { getClient } from '@temporalio/activity';
import type { CoalesceActivities } from '../../src/core/contracts';
import { steerRun } from './steer';
import { runEnd, runTook } from './watch';

/** Activities of the coalescing path. */
export function createCoalesceActivities(): CoalesceActivities {
  return {
    /** Overlap `steer`: the coalescer's events for its live run, by update (activities/coalescer/steer.ts). */
    async steerRun(input) {
      return steerRun(getClient(), input);
    },
    /** The coalescer's watch of its live run (activities/coalescer/watch.ts). */
    async runEnd(runKey) {
      return runEnd(getClient(), runKey);
    },
    /** The events a run under a taken ID took (activities/coalescer/watch.ts). */
    async runTook(runKey) {
      return runTook(getClient(), runKey);
    },
  };
}
