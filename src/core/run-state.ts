import type { EffectOutcome } from './contracts';
import type { TerminalReason } from './run-types';
import type { BudgetPool } from './budget';
import type { ToolAnswers } from './recorded-tools';

/** The run's state, plain JSON in the workflow's closure; the handlers (kill, approve, status) read and write it. */
export interface RunState {
  phase: string;
  /** The run began its commit stage (overlap `cancel`: a supersede no longer cancels it). */
  commitBegan?: boolean;
  pool?: BudgetPool;
  startedAtMs: number;
  /**
   * An agent with a model: when its wall-clock budget ends (set by the agent loop once the run may
   * work). Its steps are bounded by it (workflows/shared/deadline.ts); no timer waits for it.
   */
  deadlineMs?: number;
  /** Highest activity attempt seen (1 = nothing retried). */
  maxAttempt: number;
  effects: EffectOutcome[];
  /** A shadow run with the recorded run's tool calls: how its calls were answered (src/core/recorded-tools.ts). */
  tools?: ToolAnswers;
  approval: {
    /** The effect waiting for a person, with the exact arguments it would be carried out with. */
    pending?: { effectKey: string; effect: string; summary: string; args: Record<string, unknown> };
    decision?: { approved: boolean; who: string; reason?: string };
  };
}

/** How the agent loop ended; the wake workflow turns it into the result. */
export interface RunOutcome {
  reason: TerminalReason;
  summary: string;
  output?: unknown;
}

export function newRunState(startedAtMs: number): RunState {
  return { phase: 'starting', startedAtMs, maxAttempt: 1, effects: [], approval: {} };
}
