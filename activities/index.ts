import { createCanaryActivities } from './canary';
import { createScheduleActivities } from './schedule';

/** Every activity a wakegate worker registers. */
export function createActivities() {
  return {
    ...createCanaryActivities(),
    ...createScheduleActivities(),
  };
}

export type Activities = ReturnType<typeof createActivities>;
