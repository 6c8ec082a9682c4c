import { getClient } from '@temporalio/activity';
import type { TriggerRegistry } from '../src/gate/trigger-registry';
import { loadConfig, type OutsideConfig } from '../src/config/config';
import { createCoalesceActivities } from './coalescer/coalesce';
import { createScheduleActivities } from './schedule/schedule';
import { checkEffects, createCommitActivity } from './commit/commit';
import { chatTokens, offlineModel } from '../src/models/offline';
import { openaiCompatible } from '../src/models/providers';
import { aiSdkModel, type ModelTurn } from '../src/models/turn';
import type { Activities } from '../src/core/contracts';
import { createRunActivities } from './run/run';
import { createSupervisorActivities } from './supervisor/supervise';
import { createRolloutActivities } from './rollout/rollout';
import { pagerDutyPager, type Pager } from '../src/supervisor/pager';
import { SupervisorLinks } from '../src/supervisor/links';
import { RolloutViews } from '../src/run/rollout-views';
import { withShadows } from '../src/agents/registry';
import type { SupervisorPolicy } from '../src/core/supervisor-types';

export interface ActivityDeps {
  /** The triggers and the agents this worker runs (from `createWakegate`). */
  registry: TriggerRegistry;
  /** The supervisor's policy. */
  supervisor: SupervisorPolicy;
  outside?: OutsideConfig;
  /** Where the supervisor pages (default: PagerDuty Events API v2 at the configured URL, the local stand-in by default). */
  pager?: Pager;
  /** The model of every agent that names none of its own (default: the configured one, offline unless WAKEGATE_MODEL says otherwise). */
  model?: ModelTurn;
}

/** The model agents use when they name none: the offline model, or an OpenAI-compatible endpoint when configured. */
export function configuredModel(outside: OutsideConfig): ModelTurn {
  return aiSdkModel(
    outside.model.kind === 'openai'
      ? openaiCompatible({ baseURL: outside.model.baseUrl, apiKey: outside.model.apiKey, model: outside.model.name })
      : offlineModel(),
  );
}

/** Every activity a wakegate worker registers, wired to the agents' own code and models. Refuses provider_key effects on providers that ignore keys. */
export function createActivities(deps: ActivityDeps): Activities {
  const outside = deps.outside ?? loadConfig().outside;
  checkEffects(deps.registry.agents, outside);
  const agents = withShadows(deps.registry.agents);
  // A worker counts tokens: load the tokenizer now rather than inside its first model turn.
  chatTokens([]);
  // One link per task queue for the whole process: a run's first step takes its permit through it
  // (the run's activities), a held run re-checks through it (the supervisor's).
  const links = new SupervisorLinks({ client: getClient, policy: deps.supervisor });
  // The agents' rollouts as this process last read them: a new run of an agent with versions asks which it runs.
  const rollouts = new RolloutViews(getClient);
  const supervisor = createSupervisorActivities({
    links,
    pager: deps.pager ?? pagerDutyPager({ url: outside.pager.url, routingKey: outside.pager.routingKey, timeoutMs: outside.httpTimeoutMs }),
  });
  return {
    ...createCoalesceActivities(),
    ...createScheduleActivities({ registry: deps.registry, supervisor: deps.supervisor }),
    ...createRunActivities({
      agents,
      model: deps.model ?? configuredModel(outside),
      outside,
      runVerdict: links.runVerdict,
      rolloutVersion: (q, agent, key) => rollouts.versionFor(q, agent, key),
    }),
    ...supervisor,
    ...createRolloutActivities(),
    ...createCommitActivity(agents, outside),
  };
}

export type { Activities };
