import { builtinSchedules, createWakegate, defineSchedule } from 'wakegate';
import { exampleOptions } from '../examples/app';
import { incidentTriageOptions } from '../examples/incident-triage/app';

/**
 * The soak's deployment: the repo's examples (campaign reporter: provider_key post and the
 * irreversible reconcile export a person approves; dependency bump: idempotent PR; the canary),
 * the incident-triage example (reconcile ticket, no key) against the soak's tracker stand-in, and a
 * schedule firing every few seconds. Every process of the soak loads this module (WAKEGATE_APP).
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

export default createWakegate({
  ...exampleOptions,
  agents: [...exampleOptions.agents, ...triage.agents],
  triggers: [...exampleOptions.triggers, ...triage.triggers],
  webhookSources: [...exampleOptions.webhookSources, ...triage.webhookSources],
  schedules: [...builtinSchedules, soakReport],
});
