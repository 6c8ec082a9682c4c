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

export interface ActivityDeps {
  outside?: OutsideConfig;
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
  return {
    ...createCoalesceActivities(),
    ...createScheduleActivities(),
    ...createRunActivities({ agents, model, outside }),
    ...createCommitActivity(agents, adapters),
  };
}

export type { Activities };
