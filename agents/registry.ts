import type { AgentPolicy } from './policy';
import { campaignReporter } from './campaign-reporter';
import { dependencyBump } from './dependency-bump';

/** Every built-in agent, by name. The canary is built into the wake workflow and has no policy. */
export const builtinAgents: Readonly<Record<string, AgentPolicy>> = Object.freeze({
  [campaignReporter.name]: campaignReporter,
  [dependencyBump.name]: dependencyBump,
});
