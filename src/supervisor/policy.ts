import type { SupervisorPolicy } from '../core/supervisor-types';
import { capsFor, DEFAULT_SHADOW_CAPS } from '../core/caps';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The supervisor's default policy, for the fleet as a whole, each number with why; a deployment
 * passes its own (with caps and `onTrip` for its agents) to `createWakegate`. The worker brings it
 * to the supervisor when it starts (`configure`), so a deploy changes it.
 */
export const defaultSupervisorPolicy: SupervisorPolicy = {
  storm: {
    fleetPerMinute: 600,
    agentPerMinute: 300,
    rationale:
      'Background agents wake on schedules, webhooks and queue messages: tens of wakes a minute at a busy moment. ' +
      'Ten a second for a whole minute is an upstream firing in a loop, not business; one agent alone at half of that is one trigger gone wrong.',
  },
  errorRate: {
    windowMs: 15 * MINUTE,
    minRuns: 10,
    threshold: 0.5,
    reasons: ['failed', 'escalated', 'budget_exhausted'],
    rationale:
      'Half of the last ten or more runs in a quarter hour ending failed, escalated or out of budget is a broken model, tool or deploy: ' +
      'more runs would spend money being wrong. Fewer than ten is too few to judge.',
  },
  caps: {
    fleet: [
      { windowMs: HOUR, wakes: 1000, rationale: 'The rolling cap that refuses the thousandth wake in an hour and pages instead.' },
      {
        windowMs: DAY,
        costUsd: 50,
        tokens: 20_000_000,
        rationale: "The fleet's model spend per day: well-behaved loops must not burn the month's budget together.",
      },
    ],
    agents: {},
    shadow: [...DEFAULT_SHADOW_CAPS],
  },
  onTrip: {
    // The canary spends nothing and proves the path: let it finish. An agent not named here finishes too;
    // name your model agents `cancel` so a trip stops them at their next step.
    canary: 'finish',
  },
  overCap: {},
  observeEveryMs: 5_000,
  holdRecheckMs: 30_000,
  // A page whose ten minutes of retries ran out (or that the pager refused) is sent again after 5 min, doubling to an hour, while
  // its trip stands: a halt no one hears of is one no one resets, and the dedup key keeps every send one incident.
  pageResendMs: 5 * MINUTE,
};

/** The policy with some fields replaced (tests, benchmarks and operators: a smaller storm threshold, a short window). */
export function withSupervisorPolicy(change: Partial<SupervisorPolicy>, base: SupervisorPolicy = defaultSupervisorPolicy): SupervisorPolicy {
  return { ...base, ...change };
}

/** Whether any cap applies to `agent`: only then does its run's first step take a permit. */
export function capsApply(policy: SupervisorPolicy, agent: string): boolean {
  return capsFor(policy, agent).length > 0;
}

/**
 * Refuses a policy whose live shadows would run uncapped: `caps.shadow: []` (no cap at all: live
 * shadows would take no permit) or a shadow cap that sets none of `wakes`, `costUsd`, `tokens`.
 * Called where a deployment is composed (`createWakegate`), so a bad policy fails at start, before
 * any supervisor is configured with it. Throws an Error naming the field and the fix.
 */
export function assertSupervisorPolicy(policy: SupervisorPolicy): void {
  const shadow = policy.caps.shadow;
  if (shadow === undefined) return;
  if (shadow.length === 0)
    throw new Error(
      'supervisor.caps.shadow is [], which would leave live shadow runs with no cap at all: leave caps.shadow out for the default shadow caps, ' +
        "give a cap (e.g. { windowMs: 86_400_000, wakes: 0, rationale } for none), or remove the agents' `shadow` option to stop live shadows",
    );
  shadow.forEach((cap, i) => {
    if (cap.wakes === undefined && cap.costUsd === undefined && cap.tokens === undefined)
      throw new Error(`supervisor.caps.shadow[${i}] limits nothing: give it wakes, costUsd or tokens (live shadow runs are never uncapped)`);
  });
}
