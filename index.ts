/**
 * wakegate's public entry: everything a deployment needs to put its own agents behind the gate.
 * `import { createWakegate, defineAgent, defineTool, defineEffect } from 'wakegate'`; recipes in
 * docs/EXTENDING.md.
 */
export { createWakegate, type Wakegate, type WakegateOptions } from './runtime/wakegate';

// Agents, tools, effects
export { defineAgent, defineEffect, defineTool, DefaultAnswer, type AgentOptions, type EffectOptions, type ToolOptions } from './agents/definition';
export type {
  AgentDefinition,
  DecideContext,
  Decision,
  EffectContext,
  EffectDefinition,
  EffectReceipt,
  Proposal,
  ToolContext,
  ToolDefinition,
  ToolInput,
  ToolResult,
} from './agents/plugin';
export type { AgentRegistry } from './agents/registry';
export type { EffectClass } from './agents/policy';

// Models: any AI SDK language model, one step per activity
export { aiSdkStep as aiSdkModel, type ModelStep, type StepReply, type StepRequest } from './activities/model/step';
export { offlineModel } from './activities/model/offline';
export { anthropic, google, openaiCompatible, type ProviderSettings } from './activities/model/providers';

// Triggers, webhook sources, schedules
export { defineTrigger, type TriggerDefinition, type TriggerDefinitionInput } from './triggers/definition';
export type { WakeEvent } from './triggers/event';
export { defineWebhookSource, type CustomScheme, type DeliveryContext, type Mapped, type SignatureScheme, type WebhookSource } from './ingress/source';
export { fail as refuseSignature, type SignatureFailure, type Verdict, type Verifier } from './ingress/signatures';
export { defineSchedule, type ScheduleDefinition, type ScheduleDefinitionInput } from './schedules/definition';
export { builtinSchedules } from './schedules/definitions';

// The supervisor
export { defaultSupervisorPolicy, withSupervisorPolicy } from './supervisor/policy';
export type { SupervisorPolicy, WindowCap } from './workflows/supervisor-types';

// Configuration, and helpers for providers
export { loadConfig, type Config, type OutsideConfig } from './config/config';
export { z } from 'zod';
export { http, type HttpRequest, type HttpResponse } from './activities/http';
export { channelAdapter, type ChannelAdapter } from './activities/effects/channel';
export { localExports, type ExportAdapter } from './activities/effects/exports';
export { pullRequestAdapter, type PullRequestAdapter } from './activities/effects/pulls';
export { FailureType } from './workflows/failures';
export type { TerminalReason, WakeResult, WakeStatus } from './workflows/types';
export type { EffectOutcome } from './workflows/contracts';
export type { WakeAnswer } from './gate/decision';
