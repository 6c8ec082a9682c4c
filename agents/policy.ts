/**
 * The plain-JSON form of an agent definition that the wake workflow runs. Pure types only: the
 * workflow receives a policy from the `loadAgentPolicy` activity (recorded in history), never reads
 * the definitions itself.
 */

/** A run's limits. Every dimension is charged before the step that spends it. */
export interface BudgetLimits {
  /** Model calls. */
  turns: number;
  /** Model tokens, input plus output. */
  tokens: number;
  /** Tool calls and effects: every call that reaches outside the run. */
  toolCalls: number;
  /** Wall clock from the run's start, ms. */
  wallClockMs: number;
  /** Model spend, USD. */
  costUsd: number;
}
export type BudgetDimension = keyof BudgetLimits;
export const BUDGET_DIMENSIONS: readonly BudgetDimension[] = ['turns', 'tokens', 'toolCalls', 'wallClockMs', 'costUsd'];

/**
 * How an effect is made safe to retry:
 * - `idempotent`: idempotent by construction (upsert, PR keyed by branch): redoing it changes nothing.
 * - `provider_key`: the effect key goes to the provider as its `Idempotency-Key`; the provider dedups.
 * - `reconcile`: no key at the provider; a retry first looks the effect up by its key (landed → record,
 *   not landed → do it, cannot tell → escalate).
 */
export type EffectClass = 'idempotent' | 'provider_key' | 'reconcile';
/** Which adapter carries the effect (chosen by configuration: local stand-in or the real service). */
export type EffectKind = 'channel_post' | 'export_start' | 'pull_request';
export type ToolKind = 'dashboard_read' | 'dependency_check';

export interface EffectPolicy {
  name: string;
  description: string;
  kind: EffectKind;
  class: EffectClass;
  /** An irreversible effect waits for a person's approval unless `approval.irreversible` is `auto`. */
  reversible: boolean;
}

export interface ToolPolicy {
  name: string;
  description: string;
  kind: ToolKind;
}

export interface AgentPolicy {
  name: string;
  description: string;
  /** Trigger sources that wake this agent. */
  triggers: string[];
  systemPrompt: string;
  model: { maxOutputTokens: number; inputUsdPerMTok: number; outputUsdPerMTok: number };
  budget: BudgetLimits;
  tools: ToolPolicy[];
  /**
   * Optional cheap check before any model call: if the tool answers `nothingToDo`, the run ends
   * `no_op` having spent no tokens.
   */
  precheck?: string;
  /**
   * Subagents, one per item of the payload array `over`, each a child workflow that runs `tool` and
   * one model turn. Each is granted `grant` from the run's pool; what it does not spend returns.
   */
  subagents?: { over: string; tool: string; grant: Omit<BudgetLimits, 'wallClockMs'> };
  effects: EffectPolicy[];
  approval: { irreversible: 'required' | 'auto'; timeoutMs: number };
}
