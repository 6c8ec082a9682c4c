import type { z } from 'zod';
import type { OutsideConfig } from '../config/config';
import type { ModelTurn } from '../core/model';
import type { Proposal, ToolInput, ToolResult } from '../core/contracts';
import type { WakeEvent } from '../core/event';
import type { AgentPolicy, EffectClass } from '../core/policy';

export type { Proposal, ToolInput, ToolResult };

/** Arguments of some tool or effect, as a registry holds them (each definition keeps its own type). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyArgs = Record<string, any>;

/** Everything a tool's code may use besides its arguments: the run it serves, configuration, cancellation, progress. */
export interface ToolContext {
  /** The run this call serves: its key, wake key, entity, payload (and a subagent's item). */
  input: ToolInput;
  outside: OutsideConfig;
  /** Aborted when the run is killed or cancelled, or the worker shuts down. */
  signal: AbortSignal;
  /** Temporal's activity attempt, 1 on the first. */
  attempt: number;
  /** The last progress an earlier attempt of this call recorded with `progress` (a resume point). */
  resumeFrom: unknown;
  /** Record progress (sent with the next heartbeat, handed to a retry as `resumeFrom`). */
  progress(details: unknown): void;
}

/**
 * A tool, validated: read-only and retried freely. The model is shown `input`'s JSON Schema; its
 * arguments are validated against it before the tool runs (a bad call goes back to the model).
 */
export interface ToolDefinition<A = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  /** One call's time limit, ms. */
  readonly timeoutMs: number;
  readonly input: z.ZodType<A>;
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
}

/** What an effect's code is handed besides its arguments. */
export interface EffectContext {
  /**
   * Stable across retries, crashes, resets, restarts on a redelivery and replays (every execution of
   * one run gives one effect the same key): the provider's idempotency key, or a `reconcile` effect's
   * reference to `find` it by.
   */
  effectKey: string;
  /** Temporal's activity attempt, 1 on the first. A `reconcile` effect is looked up (`find`) before every `apply`, whatever the attempt. */
  attempt: number;
  /** Aborted when the worker shuts down (a run's kill lets an effect in flight finish). */
  signal: AbortSignal;
  /** The run that proposed it. */
  run: { runKey: string; agent: string; wakeKey: string; entity: string; eventKey: string };
  outside: OutsideConfig;
}

/** What `apply` or `find` reports: the provider's reference, and whether it says the effect was already there. */
export interface EffectReceipt {
  ref: string;
  /** The provider (or the natural key) said it was already there: a replayed key, an open PR of that branch. */
  existed?: boolean;
}

/**
 * An effect, validated: its class (how a retry is made safe), whether it can be undone, its
 * arguments' schema and its code. The commit stage runs each class's rule; the effect only applies
 * (and, for `reconcile`, finds).
 */
export interface EffectDefinition<A = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly class: EffectClass;
  readonly reversible: boolean;
  readonly input: z.ZodType<A>;
  /** One attempt's time limit, ms (`defineEffect`'s `timeout`). */
  readonly timeoutMs: number;
  /**
   * For `provider_key`: whether the provider honours the idempotency key, given the configuration.
   * A worker refuses to start an agent whose `provider_key` effect goes to one that does not.
   */
  readonly keyed?: (outside: OutsideConfig) => boolean;
  apply(args: A, ctx: EffectContext): Promise<EffectReceipt>;
  /** For `reconcile`: the effect an earlier attempt made under this key, or undefined if there is none. Throw when you cannot tell. */
  find?(ctx: EffectContext): Promise<EffectReceipt | undefined>;
}

/** What the agent's code decides from its typed answer: nothing to do, or effects to commit (after any the model proposed). */
export type Plan = { noOp: string } | { effects?: Proposal[]; summary: string };

/** What `decide` reads besides the answer: the run (its merged payload included). */
export interface DecideContext {
  run: { runKey: string; wakeKey: string; entity: string; eventKey: string; payload: Record<string, unknown> };
}

/**
 * A validated agent: the plain-JSON policy the workflow runs (through `prepareRun`), and the code
 * that stays on the process side: the wake key, tools, effects, answer schema, model.
 */
export interface AgentDefinition {
  policy: AgentPolicy;
  /** What a wake of this agent is about, from any trigger's event: coalescing goes by it. */
  wakeKey(event: WakeEvent): string;
  /** The payload this agent needs from an event, checked at the gate for each agent an event wakes. */
  payload?: z.ZodType<Record<string, unknown>>;
  /** The payload the run works on, from every event it absorbed (newest last). Default: the newest event's. */
  mergePayload(events: { payload: Record<string, unknown> }[]): Record<string, unknown>;
  tools: Readonly<Record<string, ToolDefinition<AnyArgs>>>;
  effects: Readonly<Record<string, EffectDefinition<AnyArgs>>>;
  /** The final answer's schema (the default `{ conclusion, summary }` when the agent names none). */
  answer: z.ZodType<unknown>;
  decide(answer: unknown, ctx: DecideContext): Plan;
  /** The agent's model, one turn per activity; absent: the worker's default (the offline model unless configured). */
  model?: ModelTurn;
  /** Live shadow: the candidate definition a sample of its runs also run, effects recorded only (`policy.shadow`). */
  shadow?: { candidate: AgentDefinition; sample: number };
  /** The other versions the worker can run, by version name (`defineAgent`'s `versions`). */
  versions?: Readonly<Record<string, AgentDefinition>>;
}
