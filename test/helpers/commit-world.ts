import type { EffectBegun, EffectSlot } from '../../src/core/effect-slots';
import type { EffectClass } from '../../src/core/policy';
import type { RunInput, RunResult } from '../../src/core/run-types';
import type { EffectContext, EffectDefinition, EffectReceipt } from '../../src/agents/types';
import type { RecordedEvent } from '../../src/trail/history';
import type { eventsOf } from '../../src/shadow/replay';

/* The shapes of the commit-stage model test (test/unit/commit-model.test.ts) and of the landed rules it is run against (commit-landed.ts). */

/** The logical run of the model: one workflow ID. */
export const R = 'ticket-filer@tickets/incident.opened/api/2026-12-06T09:00:00Z';

export type Name = 'ticket' | 'post' | 'sync';
export const CLASS: Record<Name, EffectClass> = { ticket: 'reconcile', post: 'provider_key', sync: 'idempotent' };

export type Cmd =
  | { k: 'deliver' }
  | { k: 'step'; pick: number }
  | { k: 'crashAfterApply'; pick: number }
  | { k: 'failNext' }
  | { k: 'refuseKnown' }
  | { k: 'lookup'; down: boolean }
  | { k: 'deploy' }
  | { k: 'nextDay' }
  | { k: 'kill'; pick: number }
  | { k: 'supersede'; pick: number }
  | { k: 'terminate'; pick: number }
  | { k: 'reset'; pick: number; older?: number }
  | { k: 'replay'; epoch?: string; includeCancelled?: boolean }
  | { k: 'advance'; ms: number };

export type Status = 'running' | 'completed' | 'failed' | 'terminated';
export interface Exec {
  runId: string;
  status: Status;
  input: Pick<RunInput, 'runKey' | 'replay' | 'eventKey' | 'origin' | 'source' | 'entity' | 'type' | 'occurredAt' | 'payload'>;
  /** The effects in the order this execution's code stages them. */
  staged: { effect: Name }[];
  step: number;
  attempt: number;
  begun: EffectBegun[];
  /** An execution reset from the Web UI: the slots it read at its start (src/commit/executions.ts `slotsAfterReset`). */
  resetSlots?: EffectSlot[];
  result?: Pick<RunResult, 'terminalReason' | 'killedBy' | 'supersededBy'>;
  /** Events skipped on it (overlap `skip`), as its history's `skipped` signals carry them. */
  history: RecordedEvent[];
}

/**
 * The rules the commit stage and the gate follow: the code as it is (CURRENT), or as it was landed
 * before (test/helpers/commit-landed.ts `landedRules`), to show the model finds what that broke.
 */
export interface Rules {
  name: string;
  /** The workflow ID a replay of R runs under. */
  replayId: string;
  /** The key of the effect at `step` of an execution. */
  key(exec: Exec, step: number): string;
  /** The slots a replay carries, from the executions of R and of its replay ID, oldest first. */
  replaySlots(execs: readonly Exec[], epoch: string): EffectSlot[];
  /** The slots a restart on a redelivery carries from R's executions (oldest first, the latest last); undefined: a plain start. */
  restartSlots(execs: readonly Exec[]): EffectSlot[] | undefined;
  /** The slots an execution reset from `base` reads at its start, from every execution of its ID before it; undefined: its input's. */
  resetSlots(execs: readonly Exec[], base: Exec): EffectSlot[] | undefined;
  /** The class rule (apply, or look first). */
  commit(effect: EffectDefinition, ctx: EffectContext, reexecution: boolean): Promise<{ receipt: EffectReceipt; outcome: string }>;
  /** Whether a replay with these flags takes a run whose latest execution is `latest`. */
  takes(latest: Exec, q: { epoch?: string; includeCancelled?: boolean }): boolean;
  /** The epoch of a replay with none named. */
  defaultEpoch(latest: Exec, day: number): string;
  /** The events a replay of `of` sends, its own first (src/shadow/replay.ts `eventsOf`). */
  replayEvents(of: Exec): ReturnType<typeof eventsOf>;
}
