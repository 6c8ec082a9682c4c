import { shadowedAgent } from './shadow';
import type { SupervisorPolicy, WindowCap } from './supervisor-types';

/** The fleet's scope in the supervisor's counters. */
export const FLEET = '*';
/** The scope of live shadow runs' caps: no agent is named so (agent names have no `~`). */
export const SHADOW_SCOPE = '~shadow';

/**
 * The shadow caps of a policy that names none (`caps.shadow` absent): live shadows are never
 * uncapped. A tenth of the default fleet's daily spend.
 */
export const DEFAULT_SHADOW_CAPS: readonly WindowCap[] = [
  {
    windowMs: 24 * 3_600_000,
    wakes: 500,
    costUsd: 5,
    tokens: 2_000_000,
    rationale:
      'Live shadow runs try a candidate on real wakes and change nothing: a tenth of the fleet’s daily spend is plenty to learn from, ' +
      'and a candidate gone wrong stops there, never holding a production run.',
  },
];

const shadowCaps = (policy: SupervisorPolicy): readonly WindowCap[] => policy.caps.shadow ?? DEFAULT_SHADOW_CAPS;

/**
 * Every cap that applies to a run of `agent`: the fleet's, then its own; for a live shadow (a
 * shadow agent name, src/core/shadow.ts), the shadow caps and nothing else.
 */
export function capsFor(policy: SupervisorPolicy, agent: string): { scope: string; cap: WindowCap }[] {
  if (shadowedAgent(agent) !== undefined) return shadowCaps(policy).map((cap) => ({ scope: SHADOW_SCOPE, cap }));
  return [...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })), ...(policy.caps.agents[agent] ?? []).map((cap) => ({ scope: agent, cap }))];
}

/** Every cap of the policy, once each, with its scope (the supervisor's status lists them). */
export function allCaps(policy: SupervisorPolicy): { scope: string; cap: WindowCap }[] {
  return [
    ...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })),
    ...Object.entries(policy.caps.agents).flatMap(([scope, cs]) => cs.map((cap) => ({ scope, cap }))),
    ...shadowCaps(policy).map((cap) => ({ scope: SHADOW_SCOPE, cap })),
  ];
}
