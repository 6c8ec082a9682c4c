import { shadowAgentName } from '../core/shadow';
import type { AgentDefinition } from './types';

/** Agents by name. */
export type AgentRegistry = Readonly<Record<string, AgentDefinition>>;

/**
 * The agents a worker runs: every agent, and each live shadow's candidate under its shadow name
 * (`<agent>/shadow`, src/core/shadow.ts) with that name and no shadow of its own. Made once, when
 * the worker's activities are made, so a run's and an effect's activity look their agent up by name
 * and nothing more.
 */
export function withShadows(agents: AgentRegistry): AgentRegistry {
  const all: Record<string, AgentDefinition> = { ...agents };
  for (const [agent, def] of Object.entries(agents)) {
    const candidate = def.shadow?.candidate;
    if (!candidate) continue;
    const name = shadowAgentName(agent);
    const { shadow: _own, ...policy } = candidate.policy;
    const { shadow: _its, ...rest } = candidate;
    all[name] = { ...rest, policy: { ...policy, name } };
  }
  return all;
}
