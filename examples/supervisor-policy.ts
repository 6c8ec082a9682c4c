import type { SupervisorPolicy, WindowCap } from 'wakegate';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The examples' supervisor policy: the fleet's breakers and caps, plus each example agent's own
 * rolling cap and what a trip does to its live runs, each number with why.
 */
export const exampleSupervisorPolicy: SupervisorPolicy = {
  storm: {
    fleetPerMinute: 600,
    agentPerMinute: 300,
    rationale:
      'The built-in triggers are a handful of schedules, campaign webhooks and package releases: tens of wakes a minute at a busy moment. ' +
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
      { windowMs: DAY, costUsd: 50, tokens: 20_000_000, rationale: 'The fleet\'s model spend per day: well-behaved loops must not burn the month\'s budget together.' },
    ],
    agents: {
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
      'dependency-bump': [{ windowMs: HOUR, wakes: 120, rationale: 'A release train opens a few dozen pull requests an hour at most; more is a loop of releases or re-runs.' }],
    } satisfies Record<string, WindowCap[]>,
  },
  onTrip: {
    // Model agents stop at their next step when the breaker trips: a run convinced it is making progress spends its budget being wrong.
    'campaign-reporter': 'cancel',
    'dependency-bump': 'cancel',
    // The canary spends nothing and proves the path: let it finish.
    canary: 'finish',
  },
  overCap: {},
  observeEveryMs: 5_000,
  holdRecheckMs: 30_000,
  // A page whose ten minutes of retries ran out (or that the pager refused) is sent again after 5 min, doubling to an hour, while
  // its trip stands: a halt no one hears of is one no one resets, and the dedup key keeps every send one incident.
  pageResendMs: 5 * MINUTE,
};

