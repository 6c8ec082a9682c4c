/** Plain-JSON types shared by the gate, the wake workflow and its callers. */
import type { HoldRecord } from './supervisor-types';
import type { RecordedToolCall, ToolAnswers } from './recorded-tools';
import type { EffectSlot } from './effect-slots';
import type { Delivered } from './delivery-ids';

/**
 * How a run ended. Recorded on the run (search attribute WakeTerminalReason and the result).
 * `failed` is for defects; every other reason is a deliberate outcome. Two belong to a schedule's
 * window that the Schedule started directly and that did not run the agent: `duplicate` (the window
 * had already run: a manual trigger or a backfill, which Temporal starts even over a completed run of
 * the same ID) and `skipped` (its catch-up policy declined it, or folded it into a newer window).
 */
export const TERMINAL_REASONS = [
  'success',
  'no_op',
  'budget_exhausted',
  'blocked',
  'escalated',
  'cancelled',
  'discarded',
  'duplicate',
  'skipped',
  'failed',
] as const;
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

/**
 * One event a run took (or, with `skip`, was told about while live): enough to audit which wakes a
 * coalesced run stands for, with the deliveries the gate saw of it (tracing only: the first ids and
 * the newest, all counted, `Delivered`). The payload travels only into the run's input, not into its result.
 */
export interface AbsorbedEvent extends Delivered {
  eventKey: string;
  source: string;
  type: string;
  entity: string;
  occurredAt: string;
  version?: number;
  payload?: Record<string, unknown>;
  /** Overlap `steer`: the run it was steered into first, which did not take it (or whose model never saw it). */
  steeredFrom?: string;
}

/**
 * An execution again of a logical run: one of its earlier executions failed (or, asked for, ended
 * otherwise), and it runs again under the same workflow ID, so Temporal keeps one execution of it
 * open at a time. `replay`: `wakegate replay`, once the cause is fixed, on the events as the gate
 * validates them today. `redelivery`: its event delivered again after the failure. Each effect takes
 * the key its slot carries from the executions before (src/core/effect-slots.ts), so what one landed
 * the next finds, never does twice.
 */
export interface ReplayOf {
  /** Names this execution: `after:<run ID of the execution it follows>`, or the epoch an operator named. */
  epoch: string;
  /** The logical run's key (its workflow ID, this execution's too). */
  of: string;
  /** Why it runs again; absent means `replay`. */
  by?: 'replay' | 'redelivery';
  /** The events the run took, with their payloads, when more than one (a coalesced run's batch and its skipped events). */
  events?: AbsorbedEvent[];
  /** Each effect slot's key, carried from the executions before (src/core/effect-slots.ts `nextSlots`). */
  effects: EffectSlot[];
}

/** What a held run carries into its next run when it continues as new (see `RunInput.resumedHold`). */
export interface ResumedHold {
  record: HoldRecord;
  /** When it was first held (workflow time, epoch ms): a release must come after it. */
  heldAtMs: number;
  /** Its re-check interval when it continued. */
  waitMs: number;
  deliveryIds: string[];
  deliveryCount: number;
  skipped: AbsorbedEvent[];
  skippedOverflow: number;
  /** A coalesced run's events with the deliveries seen of each since it started (no payloads). */
  absorbed?: AbsorbedEvent[];
  /** Overlap `steer`: the keys steered into it, and those its model has not seen yet (with their payloads). */
  steered?: { taken: string[]; waiting: (AbsorbedEvent & { payload: Record<string, unknown> })[] };
  /** A coalesced run its coalescer asked to report its end (`reportEnd`): the coalescer's ID it reports to. */
  reportEndTo?: string;
}

/** The run workflow's input: one run of one agent, about one event (the one that opened it), from its origin. */
export interface RunInput {
  /** The run's workflow ID (src/core/ids.ts): effect keys are built from it. */
  runKey: string;
  /** What the run is about: the agent's wake key. */
  wakeKey: string;
  eventKey: string;
  source: string;
  entity: string;
  type: string;
  /** When the event happened, ISO-8601 UTC. */
  occurredAt: string;
  /** Start of the key's time bucket, ISO-8601 UTC. */
  bucketStart: string;
  agent: string;
  payload: Record<string, unknown>;
  /** sha256 over the trigger's fingerprint fields; a redelivery with another fingerprint is refused. */
  fingerprint: string;
  /** The delivery that started the run (tracing only). */
  deliveryId?: string;
  /** The entity's version, when the source counts one (out-of-order detection). */
  version?: number;
  /** Which stage started the run, and what the run needs to know of it. */
  origin: RunOrigin;
  /** An execution again of this logical run (a replay or a restart on a redelivery), started by the gate. */
  replay?: ReplayOf;
  /** Set only by the run itself: the agent's version its first step pinned it to, kept across continue-as-new. */
  agentVersion?: string;
  /**
   * Set only by the run itself: a run held by the supervisor whose history grew long while it waited
   * continued as new, and goes on waiting in the same hold with what it had recorded.
   */
  resumedHold?: ResumedHold;
  /**
   * Set only by the run itself: an execution reset from the Web UI or the CLI (its run ID is not
   * the one its start event records) reads at its start the keys every other execution of the run
   * began, so what they landed keeps its key (src/commit/executions.ts `slotsAfterReset`), and the
   * run ID that read them. Reset past its start, the execution replays its start's recorded result:
   * no slots read for it, and its commit stage carries out nothing (`ResetPastStart`).
   */
  reset?: { slots?: EffectSlot[]; readFor?: string };
}

/**
 * Where a run comes from. The run knows of the stage that started it only what its origin says:
 * - `event`: one logical event, admitted by the gate (the one-call path) or by a schedule's tick;
 * - `batch`: a coalescer's batch: the coalescer (told when the run ends) and every event it took,
 *   newest last; the run's event fields are those of the event that opened the batch;
 * - `window`: a schedule's window whose Temporal Schedule started the run directly (ScheduledRunInput);
 *   workflows/schedule/window-run.ts applies its catch-up policy before the agent's first step.
 */
export type RunOrigin =
  | { kind: 'event' }
  | {
      kind: 'batch';
      coalescerId: string;
      absorbed: AbsorbedEvent[];
      /** Events absorbed past the policy's maxEventsPerRun: counted, not listed. */
      absorbedOverflow?: number;
      /** The run this one restarts (overlap `cancel`): its events are among `absorbed`. */
      supersedes?: string;
    }
  | { kind: 'window'; window: ScheduledWindow }
  | ShadowOrigin;

/**
 * A shadow run (`wakegate shadow`): a candidate definition of an agent run again on a recorded run's
 * events, under an ID of its own (src/core/ids.ts `shadowRunKey`). Its commit stage records each
 * staged effect (`ShadowEffect`) and carries none out; it asks no supervisor for a permit, waits for
 * no person, and tells no coalescer when it ends.
 */
export interface ShadowOrigin {
  kind: 'shadow';
  /** The recorded run it shadows: workflow ID and run ID. */
  of: string;
  ofRunId: string;
  /** The events the recorded run took (a coalesced run's batch); empty for a run of one event (its payload is the input's). */
  absorbed: AbsorbedEvent[];
  /** `--tools recorded`: the recorded run's tool calls and answers; a matching call is answered from these, not made. */
  tools?: RecordedToolCall[];
  /**
   * A live shadow (the agent's `shadow` option), started by the recorded run as it ended: it runs the
   * candidate under the shadow agent name, takes a permit from the supervisor's shadow caps, and ends
   * `discarded` rather than wait when it gets none. Otherwise a `wakegate shadow` session's.
   */
  live?: boolean;
}

/**
 * A schedule's window, for an agent on the one-call path: the Temporal Schedule starts the run
 * itself (no tick in between), with one fixed input; the run takes its window (its nominal time) from
 * Temporal (TemporalScheduledStartTime) and its workflow ID, `<agent>@schedule/tick/<id>-<nominal>`.
 */
export interface ScheduledWindow {
  scheduleId: string;
  catchUp: 'all' | 'latest' | 'skip';
  /** catchUp `skip`: a run starting later than this after its nominal time declines. */
  lateAfterMs: number;
  /** Set when another window's run folded into this one (catchUp `latest`): the window to run. */
  nominal?: string;
}

/** What `schedules sync` puts in the Temporal Schedule's action for a one-call agent. */
export interface ScheduledRunInput {
  scheduled: ScheduledWindow;
  agent: string;
  wakeKey: string;
  payload: Record<string, unknown>;
  fingerprint: string;
}

/** Redeliveries of the same logical event (one or several), recorded on the open run for tracing. */
export interface DeliveryNotice {
  deliveryIds: string[];
  /** Which event they deliver (a coalesced run took several); the run's own event when absent. */
  eventKey?: string;
}

/** What a finished wake returns; the gate hands it to later deliveries of the same event. */
export interface RunResult {
  runKey: string;
  eventKey: string;
  agent: string;
  wakeKey: string;
  /** The agent's version the run was pinned to (absent: it ended before its first step said). */
  agentVersion?: string;
  terminalReason: TerminalReason;
  /** One line a person can read. */
  summary: string;
  /** Delivery ids seen while the run was open: the first ones and the newest; `deliveryCount` counts every delivery (src/core/delivery-ids.ts). */
  deliveryIds: string[];
  deliveryCount: number;
  /** Agent-specific output. */
  output?: unknown;
  /** Budget consumed (agents with a policy; absent for the canary). */
  usage?: BudgetUsage;
  /** The highest attempt number any step needed (1 = nothing was retried). */
  attempts?: number;
  /** Set when the run was killed. */
  killedBy?: KillRequest;
  /** A coalesced run: the events it took, and those it was told about while live and skipped (overlap `skip`). */
  absorbed?: AbsorbedEvent[];
  absorbedOverflow?: number;
  skipped?: AbsorbedEvent[];
  skippedOverflow?: number;
  /** Overlap `steer`: keys of the absorbed events its coalescer steered into it while it ran that its model was given (a later turn). */
  steered?: string[];
  /** It began its commit stage (overlap `cancel`: a supersede that came after was refused). */
  commitBegan?: boolean;
  /** Overlap `steer`: those steered into it its model never saw, in full (not in `absorbed`: the follow-up run's). With `steered` and `commitBegan`: all its `runEnded` says. */
  unseenEvents?: (AbsorbedEvent & { payload: Record<string, unknown> })[];
  /** Cancelled by its coalescer (overlap `cancel`): the run that restarted on the newest state, with this run's events. */
  supersededBy?: string;
  /** Held by the supervisor before its first step: why, since when, and who let it go (or discarded it). */
  held?: HoldRecord;
  /** A shadow run given the recorded run's tool calls (`--tools recorded`): how many it answered from them, how many it made. */
  shadowTools?: ToolAnswers;
}

/** What the `status` query answers while a run is open. */
export interface RunStatus {
  runKey: string;
  eventKey: string;
  agent: string;
  wakeKey: string;
  absorbed?: AbsorbedEvent[];
  skipped?: AbsorbedEvent[];
  /** Overlap `steer`: keys of the absorbed events steered into it while live. */
  steered?: string[];
  phase: string;
  deliveryIds: string[];
  deliveryCount: number;
  usage?: BudgetUsage;
  /** The effect waiting for a person, with the exact arguments it would be carried out with. */
  awaitingApproval?: { effectKey: string; effect: string; summary: string; args: Record<string, unknown> };
  /** Held by the supervisor (phase `held`), or was. */
  held?: HoldRecord;
}

/** A kill request: who stopped the run and why (recorded on the result). */
export interface KillRequest {
  who: string;
  reason: string;
  /**
   * Sent by the supervisor's halt (or a trip that stops runs): a run that has not begun its work
   * (loading, or held) is a wake that arrived, held for a person's release instead of cancelled.
   */
  halt?: boolean;
  /** Only a run pinned to this version of its agent (a rollout stopping its candidate's runs); any other refuses the kill. */
  version?: string;
}

/** A person's ruling (approve or reject) on an irreversible effect waiting for approval. */
export interface ApprovalRuling {
  who: string;
  reason?: string;
  /** The effect key being decided; when given it must match the one waiting. */
  effectKey?: string;
}

/** What the kill and approval updates answer once accepted. */
export interface UpdateAck {
  accepted: true;
  phase: string;
  /** A halt reached the run before its work: it is held, not cancelled. */
  held?: boolean;
}

/** What a run consumed, per budget dimension (wall clock in ms). */
export interface BudgetUsage {
  turns: number;
  tokens: number;
  toolCalls: number;
  costUsd: number;
  wallClockMs: number;
}
