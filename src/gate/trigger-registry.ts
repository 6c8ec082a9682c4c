import type { AgentDefinition } from '../agents/types';
import type { AgentRegistry } from '../agents/registry';
import type { TriggerDefinition } from '../trigger/definition';

/**
 * The trigger definitions this deployment accepts, by source, and the agents each source wakes
 * (fan-out: every agent whose `triggers` names the source gets its own wake of the event).
 */
export class TriggerRegistry {
  private readonly bySource = new Map<string, TriggerDefinition>();
  private readonly wakes = new Map<string, AgentDefinition[]>();

  constructor(
    defs: readonly TriggerDefinition[],
    readonly agents: AgentRegistry,
  ) {
    for (const def of defs) {
      if (this.bySource.has(def.source)) throw new Error(`trigger source "${def.source}" is defined twice`);
      this.bySource.set(def.source, def);
      this.wakes.set(def.source, []);
    }
    for (const agent of Object.values(agents).sort((a, b) => (a.policy.name < b.policy.name ? -1 : 1))) {
      for (const source of agent.policy.triggers) {
        const list = this.wakes.get(source);
        if (!list) throw new Error(`agent "${agent.policy.name}" is woken by source "${source}", which no trigger defines (${this.sources().join(', ')})`);
        list.push(agent);
      }
    }
  }

  get(source: string): TriggerDefinition | undefined {
    return this.bySource.get(source);
  }

  sources(): string[] {
    return [...this.bySource.keys()].sort();
  }

  /** The agents an event of `source` wakes, by name. */
  agentsFor(source: string): readonly AgentDefinition[] {
    return this.wakes.get(source) ?? [];
  }

  agent(name: string): AgentDefinition | undefined {
    return this.agents[name];
  }
}
