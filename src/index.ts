/**
 * wakegate's public entry: everything a deployment needs to put its own agents behind the gate.
 * `import { createWakegate, defineAgent, defineTool, defineEffect } from 'wakegate'`; recipes in
 * docs/EXTENDING.md.
 */
export { createWakegate, type Wakegate, type WakegateOptions } from './runtime/wakegate';
export { WakegatePlugin } from './runtime/plugin';

// Agents, tools, effects
export { defineAgent, defineEffect, defineTool, DefaultAnswer, type AgentOptions, type EffectOptions, type ToolOptions } from './agents/definition';
export type {
  AgentDefinition,
  DecideContext,
  Plan,
  EffectContext,
  EffectDefinition,
  EffectReceipt,
  Proposal,
  ToolContext,
  ToolDefinition,
  ToolInput,
  ToolResult,
} from './agents/types';
export type { AgentRegistry } from './agents/registry';
export type { EffectClass } from './core/policy';
export { rampBucket, versionFor, versionOfView, type RolloutView } from './core/rollout';

// Models: any AI SDK language model, one turn per activity
export { aiSdkModel, type ModelTurn, type TurnReply, type TurnRequest } from './models/turn';
export { offlineModel } from './models/offline';
export { anthropic, google, openaiCompatible, type ProviderSettings } from './models/providers';

// Triggers, webhook sources, schedules
export { defineTrigger, type TriggerDefinition, type TriggerDefinitionInput, type TriggerOptions, type RunKeyEvent } from './trigger/definition';
export type { WakeEvent } from './core/event';
export { defineWebhookSource, type CustomScheme, type DeliveryContext, type Mapped, type SignatureScheme, type WebhookSource } from './trigger/webhook/source';
export { refuseSignature, type SignatureFailure, type Verdict, type Verifier } from './trigger/webhook/signatures';
export { defineSchedule, type ScheduleDefinition, type ScheduleDefinitionInput } from '../schedules/definition';
export { builtinSchedules } from '../schedules/definitions';

// The supervisor
export { defaultSupervisorPolicy, withSupervisorPolicy } from './supervisor/policy';
export type { SupervisorPolicy, WindowCap } from './core/supervisor-types';

// Configuration, and helpers for providers
export { loadConfig, type Config, type OutsideConfig, type TracingConfig } from './config/config';
export { activeTracing, type Tracing } from './tracing/provider';
export { z } from 'zod';
export { http, type HttpRequest, type HttpResponse } from './providers/http';
export { channelAdapter, type ChannelAdapter } from './providers/channel';
export { localExports, type ExportAdapter } from './providers/exports';
export { pullRequestAdapter, type PullRequestAdapter } from './providers/pulls';
export { FailureType } from './core/failures';
export type { TerminalReason, RunResult, RunStatus } from './core/run-types';
export { EFFECT_OUTCOMES, LANDED_OUTCOMES, type EffectOutcome, type EffectOutcomeName, type LandedOutcome } from './core/contracts';
export type { WakeAnswer } from './core/decision';
