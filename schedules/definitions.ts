import { defineSchedule, type ScheduleDefinition } from './definition';

/**
 * The canary's heartbeat, synced into Temporal by `wakegate schedules sync` (and `npm start`) with
 * the deployment's own schedules. Schedules are edited in code, not in the Web UI: sync overwrites
 * spec and policies from code, but never the paused state a person set.
 */
export const canaryHeartbeat = defineSchedule({
  id: 'canary-heartbeat',
  description: 'Wakes the canary every 5 minutes so a broken path (worker, gate, Temporal) shows up within one window.',
  agent: 'canary',
  payload: { note: 'heartbeat' },
  cadence: 'fixed_rate',
  spec: { every: '5m' },
  overlap: 'skip',
  catchUp: 'latest',
  rationale:
    'A heartbeat reconciles current state: a missed window has no value of its own, so after downtime it runs once (latest); ' +
    'a run still going when the next window comes means the path is slow, and stacking more runs would not help (skip).',
});

/** The schedules wakegate itself brings: the canary's heartbeat. Yours go to `createWakegate({ schedules })`. */
export const builtinSchedules: readonly ScheduleDefinition[] = [canaryHeartbeat];
