import type { AgentDefinition } from './plugin';
import { campaignReporter } from './campaign-reporter';
import { canary } from './canary';
import { dependencyBump } from './dependency-bump';

/** Agents by name. */
export type AgentRegistry = Readonly<Record<string, AgentDefinition>>;

/** Every built-in agent, by name. */
export const builtinAgents: AgentRegistry = Object.freeze({
  [canary.policy.name]: canary,
  [campaignReporter.policy.name]: campaignReporter,
  [dependencyBump.policy.name]: dependencyBump,
});

/** The same agents with some policy fields replaced (tests and operators: shorter debounce, no coalescing). */
export function withPolicies(agents: AgentRegistry, change: (def: AgentDefinition) => Partial<AgentDefinition['policy']> | undefined): AgentRegistry {
  return Object.freeze(
    Object.fromEntries(Object.entries(agents).map(([name, def]) => [name, { ...def, policy: { ...def.policy, ...(change(def) ?? {}) } }])),
  );
}
