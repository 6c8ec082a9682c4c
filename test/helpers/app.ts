import { createWakegate, type Wakegate, type WakegateOptions } from '../../src/runtime/wakegate';
import type { AgentRegistry } from '../../src/agents/registry';
import type { ModelTurn } from '../../src/models/turn';
import type { OutsideConfig } from '../../src/config/config';
import type { Pager } from '../../src/supervisor/pager';
import type { SupervisorPolicy } from '../../src/core/supervisor-types';
import { exampleOptions } from '../../examples/app';

/** The example deployment, composed the one way every process composes it (`createWakegate`). */
export const exampleApp: Wakegate = createWakegate(exampleOptions);

/** The example agents (and the canary), by name. */
export const exampleAgents: AgentRegistry = exampleApp.agents;

/** The example deployment with other agents (a test's variant of them) or other options. */
export function appOf(agents: AgentRegistry = exampleAgents, over: Partial<WakegateOptions> = {}): Wakegate {
  return createWakegate({ ...exampleOptions, agents, ...over });
}

/** The example triggers waking `agents`. */
export const registryOf = (agents?: AgentRegistry) => appOf(agents).registry;

/** The activities of the example deployment with `agents`, their providers at `outside` (the stand-ins). */
export function activitiesOf(deps: { agents?: AgentRegistry; outside?: OutsideConfig; supervisor?: SupervisorPolicy; pager?: Pager; model?: ModelTurn } = {}) {
  const { agents, ...rest } = deps;
  return appOf(agents).activities(rest);
}
