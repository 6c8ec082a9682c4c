import { versionFor, type RolloutAction, type RolloutInput, type RolloutReply, type RolloutState, type RolloutVersion } from '../../src/core/rollout';
import { promote, refusal, start, step } from './people';
import { rollback, takeEvidence } from './rollback';
import { answer, describe, type Turn } from './state';

export { refusal } from './people';
export { rollbackPageKey } from './rollback';
export { KEPT, liveVersion, newRollout } from './state';

/**
 * The rollout of one agent's candidate version as a pure machine:
 * `transition(state, input, nowMs) → { state, actions, reply }`, deterministic and with no clock of
 * its own, so workflow code can run it and continue as new with its state (plain JSON).
 *
 * - `start` (a person; from idle, promoted or rolled back, never for the version every wake runs
 *   now) ramps a share of wake keys to the candidate, under evidence checks and a promote's minimum
 *   of candidate runs; `step` widens or narrows the share; `promote` gives the candidate every new
 *   wake, once it has `minRuns` runs in the current step's window and every check passes;
 *   `rollback` gives every new wake the current version again.
 * - `evidence` brings the two versions' figures over the same window: a check that fails on them
 *   rolls the candidate back by itself, pages once, and stops its runs in flight if the check says so.
 * - `fleet` is the supervisor's mode: a held or halted fleet holds the rollout (no start, step or
 *   promote; evidence kept but not acted on). A person may still roll back.
 * Every input is answered: what happened, or why it was refused or not acted on.
 */
export interface Transition {
  state: RolloutState;
  actions: RolloutAction[];
  reply: RolloutReply;
}

/** One step: the state after `input` at `nowMs`, the actions it asks for, and its reply. `m` itself is left as it was. */
export function transition(m: RolloutState, input: RolloutInput, nowMs: number): Transition {
  const turn: Turn = { m: clone(m), nowMs, actions: [] };
  const refused = refusal(turn.m, input);
  if (refused) return { state: turn.m, actions: [], reply: answer(turn.m, false, refused) };
  // What the state keeps of the input (checks, figures) is a copy, plain JSON like the rest.
  const { accepted, message } = apply(turn, clone(input));
  return { state: turn.m, actions: turn.actions, reply: answer(turn.m, accepted, message) };
}

function apply(turn: Turn, input: RolloutInput): { accepted: boolean; message: string } {
  switch (input.kind) {
    case 'start':
      return { accepted: true, message: start(turn, input) };
    case 'step':
      return { accepted: true, message: step(turn, input) };
    case 'promote':
      return { accepted: true, message: promote(turn, input) };
    case 'rollback':
      return { accepted: true, message: rollback(turn, input) };
    case 'evidence': {
      const { acted, message } = takeEvidence(turn, input);
      return { accepted: acted, message };
    }
    case 'fleet': {
      const was = turn.m.fleet;
      turn.m.fleet = input.mode;
      const holds = input.mode === 'armed' ? 'the rollout moves again' : 'the rollout is held';
      return { accepted: true, message: `the fleet is ${input.mode}${was === input.mode ? ' still' : ''}: ${holds}; ${describe(turn.m)}` };
    }
  }
}

/**
 * The version a new wake of the rollout's agent about `wakeKey` gets: the current one while idle or
 * rolled back, the candidate once promoted, and by the key's bucket while ramping (`versionFor`).
 */
export function versionOf(m: RolloutState, wakeKey: string): RolloutVersion {
  switch (m.phase) {
    case 'idle':
    case 'rolled_back':
      return 'current';
    case 'promoted':
      return 'candidate';
    case 'ramping':
      return versionFor({ agent: m.agent, wakeKey, share: m.share });
  }
}

/** The state is plain JSON: a copy is a JSON round trip. */
function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
