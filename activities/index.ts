import { createCanaryActivities } from './canary';

/** Every activity a wakegate worker registers. */
export function createActivities() {
  return {
    ...createCanaryActivities(),
  };
}

export type Activities = ReturnType<typeof createActivities>;
