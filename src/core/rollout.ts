/**
 * A rollout of one agent's candidate version: its ramp by wake key, and the plain-JSON types of its
 * machine (workflows/rollout/): state, inputs, evidence and its checks, actions, replies and history.
 * Shared by the machine, and later its workflow, the gate (which version a wake gets) and the CLI.
 */
import { hash64 } from './hash';
import type { PageRequest } from './supervisor-requests';
import type { SupervisorMode } from './supervisor-types';

/** The version of an agent that names none. */
export const DEFAULT_VERSION = 'v1';

/** Which of a rollout's two versions a wake gets. */
export type RolloutVersion = 'current' | 'candidate';

/** A share is counted in buckets of a hundredth of a percent: the ramp's resolution. */
export const RAMP_BUCKETS = 10_000;

/**
 * The bucket of a wake key in its agent's ramp, in [0, RAMP_BUCKETS): 32 bits of a stable 64-bit
 * hash of the two (src/core/hash.ts, written by hand so workflow code may call it), scaled. The
 * agent's name, length first so no pair of names runs into another, is in the hash: two agents ramp
 * different keys. Coalesced, steered and retried wakes of one key share its bucket.
 */
export function rampBucket(agent: string, wakeKey: string): number {
  const [, low] = hash64(`${agent.length}:${agent}/${wakeKey}`);
  return Math.floor((low * RAMP_BUCKETS) / 2 ** 32);
}

/** The buckets a share covers: `round(share × RAMP_BUCKETS)`, so 0 covers none and 1 all. */
export const shareBuckets = (share: number): number => Math.round(share * RAMP_BUCKETS);

/**
 * The version a wake of `agent` about `wakeKey` gets while `share` of its wake keys run the
 * candidate: the candidate iff the key's bucket is below the share's. A key in the share at 20%
 * stays in it at 50%: widening only adds keys, narrowing only takes them away.
 */
export function versionFor({ agent, wakeKey, share }: { agent: string; wakeKey: string; share: number }): RolloutVersion {
  return rampBucket(agent, wakeKey) < shareBuckets(share) ? 'candidate' : 'current';
}

/**
 * `idle`: no candidate acting. `ramping`: a share of wake keys runs the candidate. `promoted`: every
 * new wake runs the candidate. `rolled_back`: every new wake runs the current version again.
 */
export type RolloutPhase = 'idle' | 'ramping' | 'promoted' | 'rolled_back';

/** One version's runs that closed in a window: how many, how they ended, and what they spent. */
export interface RolloutStats {
  runs: number;
  /** Runs that ended in a terminal reason other than `success` (failures among them). */
  nonSuccess: number;
  /** Runs that ended `failed`. */
  failures: number;
  tokensPerRun: number;
  usdPerRun: number;
  effectsPerRun: number;
  /** The share of the candidate's live shadow runs whose diff against the current version's run was not empty. */
  shadowDiff?: number;
}

/** What an evidence check measures: a share of runs, a figure per run, or the live shadows' diff. */
export type CheckMetric = 'non_success' | 'failures' | 'tokens_per_run' | 'usd_per_run' | 'effects_per_run' | 'shadow_diff';
/** Metrics that are shares of runs: compared by a margin over the current version's. */
export const SHARE_METRICS: readonly CheckMetric[] = ['non_success', 'failures'];
/** Metrics that are figures per run: compared by a factor of the current version's. */
export const PER_RUN_METRICS: readonly CheckMetric[] = ['tokens_per_run', 'usd_per_run', 'effects_per_run'];

/**
 * An evidence check: the candidate's figure for `metric` against a limit over the same window. The
 * limit is the least of those given: the current version's figure plus `margin` (share metrics),
 * times `factor` (per-run metrics), and `bound` (any metric; the only one for `shadow_diff`). A
 * relative limit stands only when the current version had runs in the window. A check cannot fail
 * before the candidate has `minRuns` runs there. On a failure the rollout rolls back by itself, and
 * the candidate's runs in flight finish as they are (`finish`) or are stopped (`stop`).
 */
export interface EvidenceCheck {
  name: string;
  metric: CheckMetric;
  margin?: number;
  factor?: number;
  bound?: number;
  minRuns: number;
  onFail: 'finish' | 'stop';
}

/** A check judged on one piece of evidence. `waiting`: too few runs (or no figure) to pass or fail. */
export interface CheckVerdict {
  name: string;
  metric: CheckMetric;
  status: 'pass' | 'fail' | 'waiting';
  candidate?: number;
  current?: number;
  limit?: number;
  /** In words: the figures, or what it waits for. */
  why: string;
}

/** The two versions' runs over one window, from `sinceMs` (epoch ms) to when it arrived. */
export interface RolloutEvidence {
  sinceMs: number;
  current: RolloutStats;
  candidate: RolloutStats;
}

/** The evidence the rollout last took, when, and whether the fleet was held then (not acted on). */
export interface TakenEvidence extends RolloutEvidence {
  atMs: number;
  held: boolean;
}

/** A person acts with a name and a reason. */
export interface RolloutPerson {
  who: string;
  reason: string;
}

/** What the rollout's machine is told: a person's action, evidence, or the supervisor's mode. */
export type RolloutInput =
  | ({ kind: 'start'; candidate: string; share: number; checks: EvidenceCheck[]; minRuns: number } & RolloutPerson)
  | ({ kind: 'step'; share: number } & RolloutPerson)
  | ({ kind: 'promote' } & RolloutPerson)
  | ({ kind: 'rollback'; stopInFlight?: boolean } & RolloutPerson)
  | ({ kind: 'evidence' } & RolloutEvidence)
  | { kind: 'fleet'; mode: SupervisorMode };

/** One accepted move, for the rollout's history: who, why, the share after it, and the figures it went on. */
export interface RolloutEntry {
  id: number;
  /** Which rollout of the agent (its count of starts) it belongs to. */
  rollout: number;
  kind: 'start' | 'step' | 'promote' | 'rollback';
  at: string;
  atMs: number;
  /** A person's name, or `check:<name>` for a rollback the rollout made by itself. */
  who: string;
  reason: string;
  candidate: string;
  share: number;
  figures?: { evidence: TakenEvidence; checks: CheckVerdict[] };
  /** The page's dedup key, for a rollback the rollout made by itself. */
  paged?: string;
  /** The candidate's runs in flight were asked to stop. */
  stopped?: boolean;
}

/** The rollout of one agent: plain JSON, carried whole across continue-as-new. */
export interface RolloutState {
  agent: string;
  phase: RolloutPhase;
  /** The version every wake gets outside the ramp (after a promote, the one it replaced). */
  current: string;
  candidate?: string;
  /** The share of wake keys on the candidate: 0 unless ramping or promoted (1). */
  share: number;
  checks: EvidenceCheck[];
  /** Candidate runs a promote needs in the current step's window. */
  minRuns: number;
  /** Starts so far: the number of the rollout under way. */
  rollouts: number;
  startedMs?: number;
  /** When the current step (or the start) set the share: a promote counts runs since. */
  stepMs?: number;
  fleet: SupervisorMode;
  evidence?: TakenEvidence;
  history: RolloutEntry[];
  nextEntryId: number;
}

/** What the workflow does for the machine: page once for a rollback it made, stop the candidate's runs in flight. */
export type RolloutAction = { kind: 'page'; page: PageRequest } | { kind: 'stop'; agent: string; version: string; who: string; reason: string };

/** Every input's answer: taken or not, and what happened or why not, in words. */
export interface RolloutReply {
  accepted: boolean;
  message: string;
  phase: RolloutPhase;
  share: number;
}

/**
 * What the rollout workflow publishes in its memo (key `rollout`) after every accepted move, for a
 * run's first step to read (cached): which version a new wake gets. No rollout workflow: no rollout.
 */
export interface RolloutView {
  phase: RolloutPhase;
  current: string;
  candidate?: string;
  share: number;
  /** Which rollout of the agent (its count of starts). */
  rollout: number;
}

/** A rollout's view of its state. */
export const viewOf = (m: Pick<RolloutState, 'phase' | 'current' | 'candidate' | 'share' | 'rollouts'>): RolloutView => ({
  phase: m.phase,
  current: m.current,
  ...(m.candidate !== undefined ? { candidate: m.candidate } : {}),
  share: m.share,
  rollout: m.rollouts,
});

/** The view of a rollout that has not started: every wake on `current`. */
export const newRolloutView = (current: string): RolloutView => ({ phase: 'idle', current, share: 0, rollout: 0 });

/**
 * The version name a new wake of `agent` about `wakeKey` gets under `view`: the current one while
 * idle or rolled back, the candidate once promoted, and by the key's bucket while ramping
 * ({@link versionFor}). Agrees with the machine's `versionOf` (workflows/rollout/machine.ts).
 */
export function versionOfView(view: RolloutView, agent: string, wakeKey: string): string {
  const candidate = view.candidate ?? view.current;
  switch (view.phase) {
    case 'idle':
    case 'rolled_back':
      return view.current;
    case 'promoted':
      return candidate;
    case 'ramping':
      return versionFor({ agent, wakeKey, share: view.share }) === 'candidate' ? candidate : view.current;
  }
}

/** The rollout workflow's input: its agent and fleet, the version every wake runs before any rollout, its evidence cadence, and the state it continues with. */
export interface RolloutWorkflowInput {
  taskQueue: string;
  agent: string;
  /** The agent's current version when the workflow first starts (the definition the app exports). */
  current: string;
  /** How often evidence is taken while ramping, ms (default 30 000). No timer at all while not ramping. */
  everyMs?: number;
  /** Continued as new: the state, whole. */
  state?: RolloutState;
}

/** Default cadence of evidence while ramping, ms. */
export const ROLLOUT_EVERY_MS = 30_000;

/** The rollout's status query: its state, its view, and each check's verdict on the latest evidence. */
export interface RolloutStatus {
  state: RolloutState;
  view: RolloutView;
  everyMs: number;
  /** Each check judged on the latest evidence (none taken yet: empty). */
  checks: CheckVerdict[];
}

/** What the rollout's evidence activity brings: the two versions' figures since `sinceMs`, and the supervisor's mode. */
export interface EvidenceReading extends RolloutEvidence {
  fleet: SupervisorMode;
  /** More runs closed than were read: the figures are of the first ones listed. */
  truncated: boolean;
}

/** The rollout's activities (activities/rollout/); its pages go through the supervisor's `sendPage`. */
export interface RolloutActivities {
  /**
   * The agent's runs on this task queue closed since `sinceMs`, as figures per version (a run that
   * names no version ran `current`; runs of any other version are left out), and the supervisor's mode.
   */
  rolloutEvidence(input: {
    taskQueue: string;
    agent: string;
    current: string;
    candidate: string;
    sinceMs: number;
    /** A check reads the live shadows' diff: read them too (two histories each, so only then). */
    shadowDiff?: boolean;
  }): Promise<EvidenceReading>;
  /** The supervisor's mode on this task queue (no supervisor: armed). */
  fleetMode(input: { taskQueue: string }): Promise<SupervisorMode>;
  /** Ask the agent's running runs to stop if they are on `version` (`kill` with the version); swept twice for runs not yet indexed. */
  stopVersionRuns(input: { taskQueue: string; agent: string; version: string; who: string; reason: string }): Promise<{ asked: number; stopped: number }>;
}
