import { builtinAgents, type AgentRegistry } from '../agents/registry';
import { loadConfig, type OutsideConfig } from '../config/config';
import { createCoalesceActivities } from './coalesce';
import { createScheduleActivities } from './schedule';
import { channelAdapter } from './effects/channel';
import { checkAdapters, createCommitActivity } from './effects/commit';
import { localExports } from './effects/exports';
import { pullRequestAdapter } from './effects/pulls';
import { OfflineModel } from './model/offline';
import { OpenAIModel } from './model/openai';
import type { Activities } from '../workflows/contracts';
import type { Model } from './model/types';
import { createRunActivities } from './run';
import { createSupervisorActivities } from './supervisor';
import { pagerDutyPager, type Pager } from '../supervisor/pager';
import { supervisorPolicy } from '../supervisor/policy';
import type { SupervisorPolicy } from '../workflows/supervisor-types';

export interface ActivityDeps {
  outside?: OutsideConfig;
  /** The supervisor's policy (default: supervisor/policy.ts). */
  supervisor?: SupervisorPolicy;
  /** Where the supervisor pages (default: PagerDuty Events API v2 at the configured URL, the local stand-in by default). */
  pager?: Pager;
  agents?: AgentRegistry;
  /** A model to use instead of the configured one. */
  model?: Model;
}

/** Every activity a wakegate worker registers, wired to the configured model and adapters. */
export function createActivities(deps: ActivityDeps = {}): Activities {
  const outside = deps.outside ?? loadConfig().outside;
  const agents = deps.agents ?? builtinAgents;
  const model =
    deps.model ??
    (outside.model.kind === 'openai'
      ? new OpenAIModel({ baseUrl: outside.model.baseUrl, apiKey: outside.model.apiKey, model: outside.model.name })
      : new OfflineModel());
  const adapters = {
    channel: channelAdapter(outside),
    exports: localExports(outside.exportUrl, outside.httpTimeoutMs),
    pulls: pullRequestAdapter(outside),
  };
  checkAdapters(agents, adapters);
  const { runVerdict, ...supervisor } = createSupervisorActivities({
    policy: deps.supervisor ?? supervisorPolicy,
    pager: deps.pager ?? pagerDutyPager({ url: outside.pager.url, routingKey: outside.pager.routingKey, timeoutMs: outside.httpTimeoutMs }),
  });
  return {
    ...createCoalesceActivities(),
    ...createScheduleActivities(),
    ...createRunActivities({ agents, model, outside, runVerdict }),
    ...supervisor,
    ...createCommitActivity(agents, adapters),
  };
}

export type { Activities };
