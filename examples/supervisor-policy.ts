import { defaultSupervisorPolicy, withSupervisorPolicy, type WindowCap } from 'wakegate';

const HOUR = 3_600_000;

const agentCaps = {
  'campaign-reporter': [
    {
      windowMs: HOUR,
      wakes: 600,
      costUsd: 5,
      rationale:
        'One report per campaign and change, coalesced: a few hundred campaigns changed together is a busy hour, ten runs a minute for a whole hour ' +
        'is a loop; $5 of model spend in an hour means the coalescing or a trigger is wrong whatever the count.',
    },
  ],
  'dependency-bump': [
    { windowMs: HOUR, wakes: 120, rationale: 'A release train opens a few dozen pull requests an hour at most; more is a loop of releases or re-runs.' },
  ],
} satisfies Record<string, WindowCap[]>;

/**
 * The examples' supervisor policy: wakegate's fleet-wide breakers and caps, plus each example
 * agent's own rolling cap and what a trip does to its live runs, each number with why.
 */
export const exampleSupervisorPolicy = withSupervisorPolicy({
  caps: { ...defaultSupervisorPolicy.caps, agents: agentCaps },
  onTrip: {
    // Model agents stop at their next step when the breaker trips: a run convinced it is making progress spends its budget being wrong.
    'campaign-reporter': 'cancel',
    'dependency-bump': 'cancel',
    // The canary spends nothing and proves the path: let it finish.
    canary: 'finish',
  },
});
