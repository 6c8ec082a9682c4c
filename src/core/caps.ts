import { shadowedAgent } from './shadow';
import type { SupervisorPolicy, WindowCap } from './supervisor-types';

/** The fleet's scope in the supervisor's counters. */
export const FLEET = '*';
/** The scope of live shadow runs' caps: no agent is named so (agent names have no `~`). */
export const SHADOW_SCOPE = '~shadow';

/**
 * Every cap that applies to a run of `agent`: the fleet's, then its own; for a live shadow (a
 * shadow agent name, src/core/shadow.ts), the shadow caps and nothing else.
 */
export function capsFor(policy: SupervisorPolicy, agent: string): { scope: string; cap: WindowCap }[] {
  if (shadowedAgent(agent) !== undefined) return (policy.caps.shadow ?? []).map((cap) => ({ scope: SHADOW_SCOPE, cap }));
  return [...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })), ...(policy.caps.agents[agent] ?? []).map((cap) => ({ scope: agent, cap }))];
}

/** Every cap of the policy, once each, with its scope (the supervisor's status lists them). */
export function allCaps(policy: SupervisorPolicy): { scope: string; cap: WindowCap }[] {
  return [
    ...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })),
    ...Object.entries(policy.caps.agents).flatMap(([scope, cs]) => cs.map((cap) => ({ scope, cap }))),
    ...(policy.caps.shadow ?? []).map((cap) => ({ scope: SHADOW_SCOPE, cap })),
  ];
}
