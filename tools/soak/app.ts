import { builtinSchedules, createWakegate, defineSchedule, withSupervisorPolicy } from 'wakegate';
import { exampleOptions } from '../../examples/app';
import { exampleSupervisorPolicy } from '../../examples/supervisor-policy';
import { incidentTriageOptions } from '../../examples/incident-triage/app';
import { notesAgent, notesTrigger } from './notes-agent';

/**
 * The soak's deployment: the repo's examples (campaign reporter: provider_key post and the
 * irreversible reconcile export a person approves; dependency bump: idempotent PR; the canary),
 * the incident-triage example (reconcile ticket, no key) against the soak's tracker stand-in, and a
 * schedule firing every few seconds, and the soak's own steer agent with a tight budget and short
 * coalescer horizons (tools/soak/notes-agent.ts). Every process of the soak loads this module (WAKEGATE_APP).
 */
const trackerUrl = process.env.SOAK_TRACKER_URL ?? 'http://127.0.0.1:7306';
const triage = incidentTriageOptions({ trackerUrl });

/** A campaign report every 5 s: the schedules fire throughout the soak. */
export const soakReport = defineSchedule({
  id: 'soak-campaign-report',
  description: 'The soak: a campaign report every few seconds.',
  agent: 'campaign-reporter',
  payload: { campaignId: 'soak-scheduled', dashboards: ['spend'] },
  cadence: 'fixed_rate',
  spec: { every: '5s' },
  overlap: 'skip',
  catchUp: 'latest',
  rationale: 'The soak wants schedules firing under load; a tick while one runs has nothing to add (skip).',
});

const HOUR = 3_600_000;

/**
 * The examples' supervisor policy at the soak's scale. The soak sends hundreds of wakes a minute on
 * purpose, which the examples' storm threshold (300 a minute per agent) and fleet cap (1,000 an hour)
 * rightly call a storm: they would halt and hold every new wake. Here the thresholds sit well above
 * the soak's rate, and the caps stay, so every run still takes a permit (the leases are under test).
 */
export const soakSupervisorPolicy = withSupervisorPolicy(
  {
    storm: {
      fleetPerMinute: 20_000,
      agentPerMinute: 10_000,
      rationale: 'The soak wakes hundreds of times a minute by design; a loop would still be ten times that.',
    },
    errorRate: {
      ...exampleSupervisorPolicy.errorRate,
      reasons: exampleSupervisorPolicy.errorRate.reasons.filter((r) => r !== 'budget_exhausted'),
      rationale:
        'The soak’s steer agent runs out of its tight budget on purpose (notes keep arriving while it answers): that is the case under test, ' +
        'not a broken model; failed and escalated runs still trip the breaker.',
    },
    caps: {
      ...exampleSupervisorPolicy.caps,
      fleet: [{ windowMs: HOUR, wakes: 500_000, rationale: 'Above anything the soak sends in an hour: caps apply (permits are taken) but never refuse.' }],
      agents: {
        'campaign-reporter': [{ windowMs: HOUR, wakes: 200_000, rationale: 'Above the soak: the cap applies without refusing.' }],
        'dependency-bump': [{ windowMs: HOUR, wakes: 50_000, rationale: 'Above the soak: the cap applies without refusing.' }],
      },
    },
  },
  exampleSupervisorPolicy,
);

export default createWakegate({
  ...exampleOptions,
  agents: [...exampleOptions.agents, ...triage.agents, notesAgent],
  triggers: [...exampleOptions.triggers, ...triage.triggers, notesTrigger],
  webhookSources: [...exampleOptions.webhookSources, ...triage.webhookSources],
  schedules: [...builtinSchedules, soakReport],
  supervisor: soakSupervisorPolicy,
});
