import type { AgentDefinition } from './types';

/** Agents by name. */
export type AgentRegistry = Readonly<Record<string, AgentDefinition>>;

/** The same agents with some policy fields replaced (tests and operators: shorter debounce, no coalescing). */
export function withPolicies(agents: AgentRegistry, change: (def: AgentDefinition) => Partial<AgentDefinition['policy']> | undefined): AgentRegistry {
  return Object.freeze(Object.fromEntries(Object.entries(agents).map(([name, def]) => [name, { ...def, policy: { ...def.policy, ...(change(def) ?? {}) } }])));
}
