import type { SteerAnswer, SteerDelivery, RunEnded, RunTook } from './coalesce-types';
import type { PageRequest, RunObservation, RunVerdict, WatchRequest } from './supervisor-types';
import type { RolloutActivities } from './rollout';
import type { AgentPolicy, EffectPolicy } from './policy';
import type { TickReport, WindowCheck, WindowTaken, WindowRunResult } from './schedule-types';
import type { ToolResult } from './recorded-tools';
import type { EffectSlot } from './effect-slots';

/**
 * The activities' wire contract: every activity's signature and the plain-JSON types that cross
 * between workflows and activities. Pure types only, so workflows, activities, agents, the gate and
 * the CLI all import it and none of them imports another to reach a type. The activities implement
 * these interfaces (the compiler checks it where they are built, in `activities/`); workflows proxy
 * them without importing any activity module.
 */

/** One tool call the model asked for. */
export interface ToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** One message of a model conversation. Plain JSON: requests and replies are recorded in history. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** On a `tool` message: the call it answers. */
  toolCallId?: string;
  /** On an `assistant` message: the tools it asked for. */
  toolCalls?: ToolCall[];
}

/** Starts the description of an effect given to the model (the offline model never proposes one). */
export const EFFECT_TOOL_MARK = '[effect]';

/** A tool or effect as the model is given it. */
export interface ModelTool {
  name: string;
  description: string;
  /** JSON Schema of its arguments. */
  parameters: Record<string, unknown>;
}

/** The run a model turn serves (what the agent's `decide` reads). */
export interface RunContext {
  runKey: string;
  wakeKey: string;
  entity: string;
  eventKey: string;
  payload: Record<string, unknown>;
}

/** One model turn's request (the `modelTurn` activity's input). */
export interface ModelRequest {
  agent: string;
  /** The agent's version the run is pinned to (its policy's `version`); absent: the agent's own definition. */
  agentVersion?: string;
  messages: ChatMessage[];
  tools: ModelTool[];
  /** Hard cap on the reply, so the budget's reservation is an upper bound. */
  maxOutputTokens: number;
  /** `agent`: the reply is read against the agent's own answer schema and its `decide`; `summary`: a subagent's `{ conclusion, summary }`. */
  answer: 'agent' | 'summary';
  /** The run, for the agent's `decide` (absent for a subagent's summary). */
  run?: RunContext;
}

/** One effect proposed for the commit stage (by the model in its loop, or by the agent's code from its answer). */
export interface Proposal {
  effect: string;
  args: Record<string, unknown>;
}

/**
 * One tool call of a reply, checked against the agent's tools and effects before anything runs:
 * `error` (unknown name, invalid arguments) goes back to the model; `proposes` is an effect, staged
 * for the commit stage, never carried out in the loop.
 */
export interface CheckedCall extends ToolCall {
  error?: string;
  proposes?: boolean;
}

/** A valid final answer and the plan the agent's code made of it. */
export interface FinalPlan {
  /** The answer as parsed by the agent's schema (plain JSON). */
  answer: unknown;
  summary: string;
  /** Set when the agent decided there is nothing to do. */
  noOp?: string;
  /** Effects the agent's code added after the model's own proposals (validated). */
  effects: Proposal[];
}

/** A reply that asked for no tool and whose text is not a valid answer: never acted on. */
export interface UnparsedFinal {
  /** The model's text as it came (kept for the person the run escalates to). */
  raw: string;
  /** What is wrong with it, in words the corrective turn repeats to the model. */
  problem: string;
}

/** One model turn's reply, with the provider's honest usage. */
export interface ModelReply {
  model: string;
  toolCalls: CheckedCall[];
  /** Set when the reply is a valid final answer. */
  final?: FinalPlan;
  /** Set when the reply asked for no tool and is not a valid final answer (fail closed: nothing acted on). */
  unparsedFinal?: UnparsedFinal;
  usage: { inputTokens: number; outputTokens: number };
}

/** What one tool call reads: the run's input, its arguments, and for a subagent the item it works on. */
export interface ToolInput {
  agent: string;
  /** The agent's version the run is pinned to (its policy's `version`); absent: the agent's own definition. */
  agentVersion?: string;
  tool: string;
  /** The run's key (its workflow ID); tools that record something key it by this. */
  runKey: string;
  /** What the run is about (the agent's wake key): the campaign, `repo:package`. */
  wakeKey: string;
  entity: string;
  payload: Record<string, unknown>;
  /** The arguments (the model's, validated in its turn; `{}` for a step, a precheck or a subagent's read). */
  args: Record<string, unknown>;
  /** For subagents: the item they work on (one dashboard). */
  item?: string;
}

/** What a tool hands back to the run (src/core/recorded-tools.ts, where a shadow run answers from a recorded one). */
export type { ToolResult };

/** The `commitEffect` activity's input: one staged effect of one run, under its effect key. */
export interface CommitInput {
  agent: string;
  /** The agent's version the run is pinned to (its policy's `version`); absent: the agent's own definition. */
  agentVersion?: string;
  /** From src/core/ids.ts `effectKey()`: stable across retries and replays. */
  effectKey: string;
  effect: EffectPolicy;
  args: Record<string, unknown>;
  run: { runKey: string; wakeKey: string; entity: string; eventKey: string };
  /** The run is an execution again of a logical run (a replay, or a restart on a redelivery), under its effect keys: an effect `find` does not find is `reconciled_redone`. */
  replayOf?: string;
  /** An execution reset from the Web UI or the CLI: the run ID whose start read its slots across every execution (none: its start was not run again). */
  reset?: { slotsReadFor?: string };
}

/**
 * What happened at the provider to an effect that landed: `applied` (first time), `already_applied`
 * (the provider or the natural key said it was there), `reconciled_landed` (a retry found the
 * earlier attempt's effect and recorded it), `reconciled_redone` (a retry found nothing and did it).
 */
export const LANDED_OUTCOMES = ['applied', 'already_applied', 'reconciled_landed', 'reconciled_redone'] as const;
export type LandedOutcome = (typeof LANDED_OUTCOMES)[number];

/**
 * What a run's record (its trail: `wakegate explain`, the operator's wake page) says became of one
 * staged effect: a {@link LandedOutcome}, or one that did not land:
 * - `ambiguous`: a retry could not tell whether it landed (`EffectAmbiguous`); the run ended
 *   `escalated`, and a person must check the effect key.
 * - `failed`: its commit failed for good (the provider refused it, its arguments did not parse, the
 *   attempts ran out), or the run closed while it was in flight.
 * - `rejected`: a person rejected the irreversible effect; the run ended `blocked`.
 * - `awaiting_approval`, `in_flight`: the run is still open, waiting for a person or for the effect.
 * - `not_started`: staged, but the run ended before it.
 */
export const EFFECT_OUTCOMES = [...LANDED_OUTCOMES, 'ambiguous', 'failed', 'rejected', 'awaiting_approval', 'in_flight', 'not_started'] as const;
export type EffectOutcomeName = (typeof EFFECT_OUTCOMES)[number];

/**
 * The commit activity's answer for an effect that landed (one of {@link LANDED_OUTCOMES}); a run's
 * `committed` effects are these. An effect that did not land has no such answer: the activity
 * fails, and the run's record says what became of it ({@link EffectOutcomeName}).
 */
export interface EffectOutcome {
  effectKey: string;
  name: string;
  class: EffectPolicy['class'];
  outcome: LandedOutcome;
  ref: string;
  attempt: number;
}

/**
 * What a shadow run's commit stage records for one staged effect instead of carrying it out
 * (`recordEffect`): its arguments as the effect's schema parsed them, and what the commit stage
 * would have done with it. No provider is called.
 */
export interface ShadowEffect {
  effectKey: string;
  name: string;
  class: EffectPolicy['class'];
  reversible: boolean;
  args: Record<string, unknown>;
  /** What the commit stage would have done, in words (its class's rule, and a person's approval first for an irreversible one). */
  wouldDo: string;
  /** Irreversible under `approval.irreversible: 'required'`: a real run would have waited for a person here; a shadow run does not. */
  wouldAwaitApproval: boolean;
}

/** The `runScheduledWindow` activity's input: one window of one schedule. */
export interface RunWindowInput {
  scheduleId: string;
  /** The agent the schedule wakes. */
  agent: string;
  /** The window's nominal time, ISO-8601 UTC. */
  nominal: string;
  payload: Record<string, unknown>;
  /** The tick's workflow ID: tracing only, never part of the key. */
  deliveryId: string;
}

/** The run's activities (activities/run/run.ts). */
export interface RunActivities {
  /** The agent's plain-JSON policy and the run's payload merged from every event it absorbed. Unknown agent → non-retryable. */
  prepareRun(input: {
    agent: string;
    /** What the run is about: with the agent's rollout, which version a new run gets. */
    wakeKey: string;
    /** The version the run is pinned to already (a held run that continued as new): no rollout is read. */
    agentVersion?: string;
    payloads: Record<string, unknown>[];
    /** A held run that continued as new asks the supervisor through its hold (no fresh verdict, no permit). */
    withoutVerdict?: boolean;
    /** A schedule's window its Schedule started directly: first, whether an earlier run already took it (then no verdict, no permit). */
    window?: WindowCheck;
    /** An execution reset from the Web UI or the CLI: the slots it carried, to be read against every other execution of the run. */
    afterReset?: { carried?: EffectSlot[] };
  }): Promise<{
    policy: AgentPolicy;
    payload: Record<string, unknown>;
    verdict?: RunVerdict;
    taken?: WindowTaken;
    resetSlots?: EffectSlot[];
    slotsReadFor?: string;
  }>;
  /** One model turn, one attempt; heartbeats while it waits. */
  modelTurn(req: ModelRequest): Promise<ModelReply & { attempt: number }>;
  /** One call of one of the agent's read-only tools; heartbeats with its progress. */
  toolCall(input: ToolInput): Promise<ToolResult & { attempt: number }>;
}

/** The commit activity (activities/commit/commit.ts). */
export interface CommitActivities {
  /** Carry out one effect under its class's rule; `EffectAmbiguous` when a retry cannot tell whether it landed. */
  commitEffect(input: CommitInput): Promise<EffectOutcome>;
  /** A shadow run's commit: check one effect's arguments against its schema and say what would be done; no provider is called. */
  recordEffect(input: CommitInput & { wouldAwaitApproval: boolean }): Promise<ShadowEffect>;
}

/** The coalescing path's activity (activities/coalescer/coalesce.ts). */
export interface CoalesceActivities {
  /** Overlap `steer`: send events into a live run by update and return what it took and refused (all refused if it has closed without taking them). */
  steerRun(input: SteerDelivery): Promise<SteerAnswer>;
  /** The end of a coalesced run as Temporal records it, or null while it is open (the coalescer's watch of its live run). */
  runEnd(runKey: string): Promise<RunEnded | null>;
  /** The event keys a coalesced run took, or null when none has that ID (after a coalescer reset by hand). */
  runTook(runKey: string): Promise<RunTook | null>;
}

/** The schedule workflows' activities (activities/schedule/schedule.ts). */
export interface ScheduleActivities {
  /** Pass one window through the gate and wait for its wake to end. */
  runScheduledWindow(input: RunWindowInput): Promise<WindowRunResult>;
  /** The newest due nominal time of the schedule's spec later than `afterIso`, or undefined. */
  latestDueWindow(input: { scheduleId: string; afterIso: string }): Promise<string | undefined>;
  /** Nominal times of the schedule's spec strictly between two nominal times. */
  windowsBetween(input: { scheduleId: string; afterIso: string; beforeIso: string }): Promise<string[]>;
  /** Hand a tick's decision to the schedule's ledger, starting the ledger if it is not running. */
  reportTick(input: { scheduleId: string; report: TickReport }): Promise<void>;
}

/** The supervisor's activities (activities/supervisor/supervise.ts) and a held run's re-check. */
export interface SupervisorActivities {
  /** Runs of this task queue closed in (fromMs, toMs], oldest first, at most `limit`; with `watch`, read on in one activity until the burst is over. */
  observeRuns(input: { taskQueue: string; fromMs: number; toMs?: number; limit: number; watch?: WatchRequest }): Promise<RunObservation>;
  /** Send one page; its dedup key makes a retried send one incident. */
  sendPage(page: PageRequest): Promise<{ dedupKey: string; status: string }>;
  /** Kill the live (not held) runs of this task queue, of the agents named (all when absent). */
  stopLiveRuns(input: { taskQueue: string; agents?: string[]; who: string; reason: string }): Promise<{ stopped: number; held: number }>;
  /** Tell held runs (of one agent, or all) to re-check the supervisor now. */
  nudgeHeld(input: { taskQueue: string; agent?: string }): Promise<{ nudged: number }>;
  /** A held run asks again: run, stay held, or discarded. */
  recheckHold(input: {
    agent: string;
    hold: 'halted' | 'cap';
    heldAtMs: number;
    /** Nudged by the supervisor: read it afresh. */ nudged?: boolean;
  }): Promise<RunVerdict>;
}

export type { RolloutActivities };

/** Every activity a wakegate worker registers. */
export type Activities = RunActivities & CommitActivities & CoalesceActivities & ScheduleActivities & SupervisorActivities & RolloutActivities;
