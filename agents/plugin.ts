import type { z } from 'zod';
import type { OutsideConfig } from '../config/config';
import type { EffectRequest, FinalAnswer, ToolInput, ToolResult } from '../workflows/contracts';
import type { WakeEvent } from '../triggers/event';
import type { WakeInput } from '../workflows/types';
import type { AgentPolicy } from './policy';

export type { ToolInput, ToolResult };

/** Everything a tool implementation may use: its input, where the outside world is, cancellation, progress. */
export interface ToolContext {
  input: ToolInput;
  outside: OutsideConfig;
  /** Aborted when the run is killed or cancelled, or the worker shuts down. */
  signal: AbortSignal;
  attempt: number;
  /** The last progress an earlier attempt of this call recorded with `progress` (a resume point). */
  resumeFrom: unknown;
  /** Record progress (sent with the next heartbeat, handed to a retry as `resumeFrom`). */
  progress(details: unknown): void;
}

/** A tool of an agent: read-only, retried freely. Runs in the `toolCall` activity. */
export interface ToolImpl {
  name: string;
  description: string;
  /** How long one call may take, as a duration string; default "2 minutes". */
  timeout?: string;
  run(ctx: ToolContext): Promise<ToolResult>;
}

/** What an effect's request is built from: the run's input and the model's final answer. */
export interface EffectRequestContext {
  input: WakeInput;
  /** Absent for a tool-only agent. */
  final?: FinalAnswer;
}

/**
 * A validated agent: the plain-JSON policy the workflow runs (through `loadAgentPolicy`), and the
 * code that stays on the process side: the wake key, the tools, the effect request builders.
 */
export interface AgentDefinition {
  policy: AgentPolicy;
  /** What a wake of this agent is about, from any trigger's event: coalescing, admission, caps go by it. */
  wakeKey(event: WakeEvent): string;
  /** The payload this agent needs from an event, checked at the gate for each agent an event wakes. */
  payload?: z.ZodType<Record<string, unknown>>;
  /** The payload the run works on, from every event it absorbed (newest last). Default: the newest event's. */
  mergePayload(events: { payload: Record<string, unknown> }[]): Record<string, unknown>;
  tools: Readonly<Record<string, ToolImpl>>;
  /** The provider request of each effect, by effect name. */
  requests: Readonly<Record<string, (ctx: EffectRequestContext) => EffectRequest>>;
}
