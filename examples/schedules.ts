import { builtinSchedules, defineSchedule } from 'wakegate';

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

/** The canary's heartbeat (wakegate's own) and the campaign report. */
export const exampleSchedules = [...builtinSchedules, springSaleReport];
