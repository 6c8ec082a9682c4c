import { ApplicationFailure } from '@temporalio/common';
import type { BudgetLimits, CoalescePolicy } from '../../src/core/policy';
import type { AgentRegistry } from '../../src/agents/registry';
import type { AgentDefinition } from '../../src/agents/types';
import { exampleAgents } from './app';

/** The same agents with some policy fields replaced (tests and benchmarks: a shorter debounce, no coalescing). */
export function withPolicies(agents: AgentRegistry, change: (def: AgentDefinition) => Partial<AgentDefinition['policy']> | undefined): AgentRegistry {
  return Object.freeze(Object.fromEntries(Object.entries(agents).map(([name, def]) => [name, { ...def, policy: { ...def.policy, ...(change(def) ?? {}) } }])));
}

/** The built-in agents, coalescing ones with a short debounce (tests cannot wait 10 s per run), other fields overridable. */
export function quickAgents(over: Partial<CoalescePolicy> = {}, base: AgentRegistry = exampleAgents): AgentRegistry {
  return withPolicies(base, (d) => (d.policy.coalesce ? { coalesce: { ...d.policy.coalesce, debouncePeriodMs: 200, maxWaitMs: 1000, ...over } } : undefined));
}

/** The built-in agents on the one-call path (no coalescing): for tests of a trigger, not of coalescing. */
export function oneCallAgents(base: AgentRegistry = exampleAgents): AgentRegistry {
  return withPolicies(base, (d) => (d.policy.coalesce ? { coalesce: undefined } : undefined));
}

/** One agent of `base` given a coalescing policy (the canary has none of its own). */
export function coalescing(name: string, policy: Partial<CoalescePolicy> = {}, base: AgentRegistry = exampleAgents): AgentRegistry {
  return withPolicies(base, (d) =>
    d.policy.name === name
      ? {
          coalesce: {
            debouncePeriodMs: 300,
            maxWaitMs: 2000,
            whileRunning: 'skip',
            idleCloseMs: 60_000,
            dedupHorizonMs: 60_000,
            maxEventsPerRun: 1000,
            ...policy,
          },
        }
      : undefined,
  );
}

/** The built-in agents with the canary's `record` step failing for good: its runs fail. */
export function failingCanary(base: AgentRegistry = exampleAgents): AgentRegistry {
  const canary = base.canary!;
  return Object.freeze({
    ...base,
    canary: {
      ...canary,
      tools: {
        ...canary.tools,
        record: { ...canary.tools.record!, run: () => Promise.reject(ApplicationFailure.nonRetryable('recorder is down', 'RecorderDown')) },
      },
    },
  });
}

/** The built-in agents with one agent's budget tightened: each limit given is the lower of it and the agent's own. */
export function withBudget(name: string, tighter: Partial<BudgetLimits>, base: AgentRegistry = exampleAgents): AgentRegistry {
  return withPolicies(base, (d) => {
    if (d.policy.name !== name) return undefined;
    const budget = { ...d.policy.budget };
    for (const k of Object.keys(budget) as (keyof BudgetLimits)[]) budget[k] = Math.min(budget[k], tighter[k] ?? budget[k]);
    return { budget };
  });
}
