import type { CoalescerState } from '../core/coalesce-types';
import type { CoalescePolicy } from '../core/policy';
import type { RunInput, RunResult, ScheduledRunInput, RunStatus } from '../core/run-types';
import type { RecordedEvent } from './history';

/**
 * What the trail read from Temporal, as plain JSON: the input of the pure assembly
 * (src/trail/assemble.ts). src/trail/read.ts fills it; unit tests write it by hand from recorded shapes.
 */
export interface Recorded {
  agent: string;
  wakeKey: string;
  path: 'coalescing' | 'one-call';
  /** The window, ISO-8601 UTC. */
  since: string;
  until: string;
  /** Runs about the wake key: those visibility lists in the window, and those the coalescer names. */
  runs: RecordedRun[];
  /** Runs visibility listed past the cap, not read. */
  runsNotRead: number;
  /** The coalescer's executions, oldest first (the last is its current one). */
  coalescers: RecordedCoalescer[];
  /** Events the coalescer's dedup table holds past the newest it was asked for (the cap). */
  eventsNotRead: number;
  looked: string[];
}

export interface RecordedRun {
  workflowId: string;
  runId?: string;
  /** Temporal's status name (`RUNNING`, `COMPLETED`, `FAILED`, ...). */
  status: string;
  startedAt: string;
  closedAt?: string;
  /** Search attributes, when visibility listed it. */
  indexed?: { eventKey?: string; deliveryIds?: string[]; held?: string };
  input?: RunInput | ScheduledRunInput;
  result?: RunResult;
  /** The open run's `status` query, when it answered. */
  live?: RunStatus;
  history: RecordedEvent[];
}

export interface RecordedCoalescer {
  workflowId: string;
  runId?: string;
  status: string;
  startedAt?: string;
  closedAt?: string;
  policy?: CoalescePolicy;
  /** Its state, with the newest entries of its dedup table (`seen`). */
  state?: CoalescerState;
  /** How many events its dedup table held when read (the query says; otherwise the entries read). */
  seenCount?: number;
  /**
   * `query`: the open coalescer answered; `result`: a closed one's result; `history`: an open one
   * that did not answer, its answers read from its history; `input`: only the state it started with.
   */
  readVia: 'query' | 'result' | 'history' | 'input' | 'none';
}
