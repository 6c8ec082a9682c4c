import type { EffectOutcome, EffectOutcomeName } from '../core/contracts';
import type { BudgetLimits } from '../core/policy';
import type { Decision } from '../core/decision';
import type { BudgetUsage, TerminalReason } from '../core/run-types';

/**
 * The decision trail of one (agent, wake key) over a window of time: what became of every event
 * received about it and what each run then did. Plain JSON, assembled from what Temporal already
 * records (src/trail/assemble.ts); the CLI prints it (`wakegate explain`) and the operator listener
 * draws it (`/wakes/<agent>/<wakeKey>`).
 */
export interface WakeTrail {
  agent: string;
  wakeKey: string;
  /** `coalescing`: events pass the agent's coalescer; `one-call`: each event is its own run. */
  path: 'coalescing' | 'one-call';
  /** The window read, ISO-8601 UTC: events that arrived and runs that started in it (live runs whenever they started). */
  window: { since: string; until: string };
  /** False when nothing about the wake key is recorded in the window (the CLI exits 3, the page says so). */
  found: boolean;
  /** Oldest arrival first. */
  events: TrailEvent[];
  /** Events recorded in the window but past the cap (the newest are listed). */
  eventsNotListed: number;
  /** Oldest start first. */
  runs: TrailRun[];
  runsNotListed: number;
  /** The coalescer of (agent, wake key), when the agent coalesces and one was found. */
  coalescer?: TrailCoalescer;
  /** Every read made: which query, which workflow, what it gave. */
  looked: string[];
  /** What this trail cannot show, because nothing records it. */
  notRecorded: string[];
}

/** What became of one event, as recorded. */
export type TrailDecision = Extract<Decision, 'started' | 'coalesced' | 'skipped' | 'steered' | 'stale' | 'mismatch' | 'held' | 'completed' | 'accepted'>;

export interface TrailEvent {
  eventKey: string;
  source: string;
  type: string;
  entity: string;
  version?: number;
  /** When it happened (the event's own time). */
  occurredAt: string;
  /** When it was recorded (its coalescer's decision, or its run's start); null when only a run's list names it. */
  arrivedAt: string | null;
  /** Deliveries recorded for it (a webhook's id, a queue message, a schedule's tick): the first ones and the newest. */
  deliveryIds: string[];
  /** Deliveries counted, when more than `deliveryIds` (the ids between were let go: src/core/delivery-ids.ts). */
  deliveryCount?: number;
  decision: TrailDecision;
  /** The decision in words: which run, which version, which trip. */
  reason: string;
  /** The run that took it (for `skipped`: the live run it was recorded on; for `mismatch`: the run holding the other inputs). */
  runKey?: string;
  /** The run that finally took it, when `runKey` was cancelled and restarted (overlap `cancel`), or refused it as steered while committing (overlap `steer`). */
  finalRunKey?: string;
  /** For `stale`: the newest version seen from its source. */
  newestVersion?: number;
  /** For `held`: the trip that held its run, when the hold names one. */
  tripId?: number;
  /** Where each fact came from: `coalescer`, `run`. */
  recordedBy: string[];
}

export interface TrailRun {
  runKey: string;
  runId?: string;
  /** Temporal's status, or `PENDING` for a batch its coalescer has not started yet. */
  status: string;
  /** When it started (for `PENDING`: when its batch opened). */
  startedAt: string;
  /** When it closed (for `PENDING`: when its debounce lets it start). */
  closedAt?: string;
  terminalReason?: TerminalReason;
  summary?: string;
  /** Its phase while open (`thinking`, `awaiting_approval`, `held`, ...), when the run answered its status query. */
  phase?: string;
  /** Event keys it took; overflow past the policy's maxEventsPerRun is counted. */
  absorbed: string[];
  absorbedOverflow?: number;
  /** Event keys it was told about while live and skipped (overlap `skip`). */
  skipped: string[];
  /** Event keys of `absorbed` steered into it while live (overlap `steer`). */
  steered?: string[];
  /** The first delivery ids it saw and the newest. */
  deliveryIds: string[];
  /** Deliveries counted, when more than `deliveryIds`. */
  deliveryCount?: number;
  /** Model turns answered (its own and its subagents'), and tool calls made (effects not included). */
  modelTurns: number;
  toolCalls: number;
  subagents: number;
  usage?: BudgetUsage;
  /** The agent's budget as the run's first step read it. */
  budget?: BudgetLimits;
  /** The agent's version the run was pinned to (its rollout's word at its first step). */
  version?: string;
  held?: { hold: 'halted' | 'cap'; reason: string; heldAt: string; tripId?: number; releasedAt?: string; releasedBy?: { who: string; reason: string } };
  killedBy?: { who: string; reason: string };
  supersedes?: string;
  supersededBy?: string;
  /** Woken by `wakegate replay`: the epoch and the recorded run it replays. */
  replay?: { epoch: string; of: string };
  /** A schedule's window that had already run: the run that took it. */
  takenBy?: string;
  effects: TrailEffect[];
}

export interface TrailEffect {
  effectKey: string;
  effect: string;
  class?: EffectOutcome['class'];
  reversible?: boolean;
  /** sha256 of the arguments as canonical JSON, first 16 hex digits: compare two effects without printing their arguments. */
  argsDigest?: string;
  /** What became of it: the provider's outcome when it landed, else why not (see {@link EffectOutcomeName}). */
  outcome: EffectOutcomeName;
  ref?: string;
  attempt?: number;
  /** When its commit finished (or failed). */
  at?: string;
  approval: TrailApproval;
}

/** An irreversible effect under `approval.irreversible: 'required'` waits for a person. */
export interface TrailApproval {
  required: boolean;
  decision?: 'approved' | 'rejected' | 'waiting' | 'timed_out';
  who?: string;
  reason?: string;
  at?: string;
}

export interface TrailCoalescer {
  coalescerId: string;
  status: string;
  /** How its state was read: its `coalescer` query (open), its result (closed), its history (open, no worker to answer), or not at all. */
  readVia: 'query' | 'result' | 'history' | 'input' | 'none';
  counts?: { offered: number; started: number; coalesced: number; skipped: number; stale: number; runs: number; steered?: number; steerRefused?: number };
  policy?: { debouncePeriodMs: number; maxWaitMs: number; whileRunning: string };
}
