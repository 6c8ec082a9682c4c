import { builtinSchedules, defineSchedule } from 'wakegate';

/**
 * A daily look at the backlog, held by a Temporal Schedule (`npm start` and `wakegate schedules sync`
 * create or update it; a schedule paused by hand stays paused).
 */
export const dailyBacklog = defineSchedule({
  id: 'triage-daily-backlog',
  description: 'Once a day, triage the backlog ticket.',
  agent: 'triage',
  payload: { ticketId: 'backlog', title: 'Daily backlog review' },
  cadence: 'fixed_rate',
  spec: { cron: ['0 8 * * *'] },
  overlap: 'skip',
  catchUp: 'latest',
  rationale:
    'A review looks at the backlog as it is now: after downtime one review covers the missed days (latest), and a review still running needs no second one (skip).',
});

/** wakegate's canary heartbeat and the backlog review. */
export const schedules = [...builtinSchedules, dailyBacklog];
