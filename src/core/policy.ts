/**
 * The plain-JSON form of an agent definition that the run workflow runs. Pure types only: the
 * workflow receives a policy from the `prepareRun` activity (recorded in history), never reads
 * the definitions (or their code) itself.
 */

/** A JSON Schema document (draft 2020-12), as zod's `z.toJSONSchema` writes it. */
export type JsonSchema = Record<string, unknown>;

/** A run's limits. Every dimension is charged before the step that spends it. */
export interface BudgetLimits {
  /** Model turns. */
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

/**
 * How an effect is made safe to retry:
 * - `idempotent`: idempotent by construction (upsert, PR keyed by branch): redoing it changes nothing.
 * - `provider_key`: the effect key goes to the provider as its `Idempotency-Key`; the provider dedups.
 * - `reconcile`: no key at the provider; a retry first looks the effect up by its key (landed → record,
 *   not landed → do it, cannot tell → escalate).
 */
export type EffectClass = 'idempotent' | 'provider_key' | 'reconcile';

/** An effect's `timeout` when it names none: one attempt's limit, ms. */
export const DEFAULT_EFFECT_TIMEOUT_MS = 30_000;

export interface EffectPolicy {
  name: string;
  description: string;
  class: EffectClass;
  /** An irreversible effect waits for a person's approval unless `approval.irreversible` is `auto`. */
  reversible: boolean;
  /** JSON Schema of its arguments (given to the model when the model proposes effects). */
  parameters: JsonSchema;
  /**
   * One attempt's time limit (the commit activity's start-to-close timeout), ms. Absent in the
   * policies of runs prepared before effects had one: {@link DEFAULT_EFFECT_TIMEOUT_MS}.
   */
  timeoutMs?: number;
}

export interface ToolPolicy {
  name: string;
  description: string;
  /** How long one call may take (the activity's start-to-close timeout), ms. */
  timeoutMs: number;
  /** JSON Schema of its arguments, as the model is given it. */
  parameters: JsonSchema;
}

/**
 * What a live or pending run does with more wakes about the same wake key (one coalescer per
 * (agent, wake key) applies it):
 * - debounce: a burst collapses into one run that starts once no wake came for `debouncePeriodMs`,
 *   and at the latest `maxWaitMs` after the first wake of the burst.
 * - whileRunning: `skip` (the wake is recorded on the live run and runs nothing), `buffer_one` (one
 *   follow-up run takes every wake that arrived meanwhile), `cancel` (the live run is cancelled and a
 *   new one restarts on the newest state, taking the cancelled run's wakes too), `steer` (the wake is
 *   delivered into the live run, which gives it to its model before the next turn; once that run has
 *   begun committing it takes no more, and the wake waits for one follow-up run, as with `buffer_one`).
 */
export interface CoalescePolicy {
  debouncePeriodMs: number;
  maxWaitMs: number;
  whileRunning: 'skip' | 'buffer_one' | 'cancel' | 'steer';
  /** The coalescer closes after this long with no wake and no run (and never before its dedup horizon has passed); out-of-order checks reach back this far. */
  idleCloseMs: number;
  /**
   * How long the coalescer remembers an event it decided, by key, to answer its redeliveries (and
   * refuse other inputs under the same key); it stays open until the newest has passed. Set it to the
   * namespace's retention to dedup as long as Temporal keeps closed runs.
   */
  dedupHorizonMs: number;
  /** Wakes kept in full on one run; past it they are counted (and the newest is always kept). */
  maxEventsPerRun: number;
}

export interface AgentPolicy {
  name: string;
  /**
   * Which version of the agent this is (`defineAgent`'s `version`, `v1` unless named). A run is
   * pinned to the version it started on: its policy, and every activity it calls, come from it.
   * Histories recorded before versions existed carry none: they run the agent's own definition.
   */
  version?: string;
  description: string;
  /** Trigger sources that wake this agent. */
  triggers: string[];
  /** Why the agent's wake key is what it is: what one wake of this agent is about. */
  wakeKeyRationale: string;
  /** Coalescing of wakes per wake key; absent: every logical event is its own run (the gate's one-call path). */
  coalesce?: CoalescePolicy;
  systemPrompt: string;
  /** Absent for a tool-only agent (the canary): it runs `steps` and ends `success` without a model. */
  model?: { maxOutputTokens: number; inputUsdPerMTok: number; outputUsdPerMTok: number };
  /** Tools run in order before anything else, each once (a tool-only agent's whole run). */
  steps?: string[];
  budget: BudgetLimits;
  tools: ToolPolicy[];
  /**
   * Optional cheap check before any model turn: if the tool answers `nothingToDo`, the run ends
   * `no_op` having spent no tokens.
   */
  precheck?: string;
  /**
   * Subagents, one per item of the payload array `over`, each a child workflow that runs `tool` and
   * one model turn. Each is granted `grant` from the run's pool; what it does not spend returns.
   */
  subagents?: { over: string; tool: string; grant: Omit<BudgetLimits, 'wallClockMs'> };
  /** The effects the agent may commit; the commit stage carries out only these, each by its class's rule. */
  effects: EffectPolicy[];
  /**
   * Who proposes effects: `model` (each effect is given to the model as a proposal it can make in
   * its loop) or `code` (the agent's `decide` picks them from its typed answer; none is given).
   */
  proposedBy: 'model' | 'code';
  /** JSON Schema of the agent's final answer (told to the model, and in its corrective turn). */
  answerSchema: JsonSchema;
  approval: { irreversible: 'required' | 'auto'; timeoutMs: number };
  /** Live shadow: the share of its runs (0 to 1) that also start a shadow run of its candidate when they end. */
  shadow?: { sample: number };
}
