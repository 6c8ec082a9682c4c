/** Plain-JSON types shared by the schedule workflows, their activities and the CLI. */

export type CatchUp = 'all' | 'latest' | 'skip';

/** The tick's input (a coalescing agent's window), fixed in the Temporal Schedule's action by `schedules sync`. */
export interface ScheduleTickInput {
  scheduleId: string;
  /** The agent its windows wake. */
  agent: string;
  payload: Record<string, unknown>;
  catchUp: CatchUp;
  /** catchUp `skip`: a tick starting later than this after its nominal time is a gap. */
  lateAfterMs: number;
}

/** Why a window did not run. */
export type GapReason =
  /** Temporal started no tick for it: skipped by overlap, or missed its catch-up window (see describe counts). */
  | 'not_started'
  /** catchUp `skip`: the tick started too late (the scheduler was down or behind) and declined. */
  | 'late_skipped'
  /** catchUp `latest`: a newer window was already due; this one was folded into it. */
  | 'coalesced';

export interface GapRecord {
  /** Nominal time of the window, ISO-8601 UTC (seconds). */
  nominal: string;
  reason: GapReason;
  /** For `coalesced`: the window that ran instead. */
  into?: string;
  /** When the ledger recorded it (workflow time, ISO). */
  recordedAt: string;
}

/** What a tick tells the ledger, once, when it has decided. */
export interface TickReport {
  nominal: string;
  outcome: 'run' | 'late_skipped' | 'coalesced';
  into?: string;
}

export interface LedgerState {
  scheduleId: string;
  /** Newest nominal time reported so far. */
  lastNominal?: string;
  gaps: GapRecord[];
  /** Gaps dropped from the front of the list to keep the state bounded. */
  droppedGaps: number;
  reports: number;
  /** Recent windows that ran because a late tick was folded into them (catchUp `latest`). */
  covered?: string[];
}

/** What one run of a window did. */
export interface WindowRunResult {
  nominal: string;
  /** The gate's decision for the window's event key. */
  decision: string;
  eventKey: string;
  /** The run that took the window (a coalesced run may have taken other wakes too). */
  workflowId: string;
  terminalReason?: string;
}

/** Where to look for an earlier run of a window: this run's workflow ID and run ID. */
export interface WindowCheck {
  workflowId: string;
  runId: string;
}

/** The run that already took a window: its workflow ID and run, how it ended, its fingerprint memo. */
export interface WindowTaken {
  workflowId: string;
  runId: string;
  status: string;
  terminalReason?: string;
  fingerprint?: string;
}

export interface ScheduleTickResult {
  scheduleId: string;
  nominal: string;
  nominalSource: 'search_attribute' | 'workflow_id' | 'start_time';
  outcome: TickReport['outcome'];
  run?: WindowRunResult;
  into?: string;
}

/** Input of the fixed-delay loop (carried across continue-as-new). */
export interface FixedDelayInput {
  scheduleId: string;
  /** The agent its windows wake. */
  agent: string;
  payload: Record<string, unknown>;
  delayMs: number;
  /** Stop after this many runs in total (like a Schedule's remainingActions); unlimited if absent. */
  maxRuns?: number;
  state?: FixedDelayState;
}

export interface FixedDelayState {
  runs: number;
  /** Start of the first run, epoch ms (workflow time). */
  firstStartMs?: number;
  lastStartMs?: number;
  lastEndMs?: number;
  /** Period between the last two starts, ms: run duration + delay. */
  lastPeriodMs?: number;
  /** How far the last start lies behind a fixed-rate grid of `delayMs` from the first start, ms. */
  driftMs: number;
  lastTerminalReason?: string;
}
