import { defineSchedule, type ScheduleDefinition } from './definition';

/**
 * The schedules this deployment runs, synced into Temporal by `wakegate schedules sync` (and
 * `npm start`). Edit here, not in the Web UI: sync overwrites spec and policies from code, but never
 * the paused state a person set.
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

/**
 * The seed's reporting agent on its hourly schedule. Its wake key is the campaign named in the
 * payload, so this tick, a config-change webhook and a report request from the CLI about the same
 * campaign reach one coalescer: within the debounce they are one run, one post, one export.
 */
export const springSaleReport = defineSchedule({
  id: 'campaign-report-spring-sale',
  description: 'The hourly report of the spring-sale campaign.',
  agent: 'campaign-reporter',
  payload: { campaignId: 'spring-sale', dashboards: ['spend', 'clicks'] },
  cadence: 'fixed_rate',
  spec: { every: '1h' },
  overlap: 'skip',
  catchUp: 'latest',
  rationale:
    'A report describes the campaign as it is now, so after downtime one report covers the missed hours (latest); a report still ' +
    'running (or waiting for its export’s approval) when the next hour comes has nothing to gain from a second one (skip).',
});

export const scheduleDefinitions: readonly ScheduleDefinition[] = [canaryHeartbeat, springSaleReport];
