import type { WakegateOptions } from 'wakegate';
import { exampleSchedules } from './schedules';
import { campaignReporter } from './campaign-reporter';
import { campaignsTrigger } from './campaigns-trigger';
import { campaignsSource } from './campaigns-webhook';
import { dependencyBump } from './dependency-bump';
import { depsTrigger } from './deps-trigger';
import { githubSource } from './github-webhook';
import { exampleSupervisorPolicy } from './supervisor-policy';

/**
 * The example deployment `npm start` runs: the seed's campaign reporter and dependency bump, their
 * triggers, webhook sources and schedule, and a supervisor policy that names them. Written against
 * the public entry alone, as a user's own would be.
 */
export const exampleOptions = {
  agents: [campaignReporter, dependencyBump],
  triggers: [campaignsTrigger, depsTrigger],
  webhookSources: [campaignsSource, githubSource],
  schedules: exampleSchedules,
  supervisor: exampleSupervisorPolicy,
} satisfies WakegateOptions;
