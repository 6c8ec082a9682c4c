import type { WakegateOptions } from 'wakegate';
import { incidentTriage, type IncidentTriageOptions } from './agent';
import { incidentsTrigger } from './trigger';
import { trackerSource } from './webhook';

/**
 * The incident-triage deployment's options: the agent (pointed at `trackerUrl`), its trigger and the
 * tracker's webhook source. Compose it with `createWakegate(incidentTriageOptions({ trackerUrl }))`,
 * or spread it into a larger deployment's options.
 */
export function incidentTriageOptions(opts: IncidentTriageOptions) {
  return {
    agents: [incidentTriage(opts)],
    triggers: [incidentsTrigger],
    webhookSources: [trackerSource],
  } satisfies WakegateOptions;
}
