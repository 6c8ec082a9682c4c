import type { RolloutAction, RolloutEntry, RolloutReply, RolloutState } from '../../src/core/rollout';
import { pct } from './checks';

/*
 * The rollout machine's step in progress and the helpers its rules share. Pure: no Temporal import,
 * no clock (every step is given `nowMs`), plain JSON throughout.
 */

/** History entries kept: the last this many moves (each has an id, so a reader sees what was dropped). */
export const KEPT = 100;

/** One step in progress: the (copied) state it changes, its time, and the actions it asks for. */
export interface Turn {
  m: RolloutState;
  nowMs: number;
  actions: RolloutAction[];
}

/** A new agent's rollout: nothing ramping, every wake on `current`, the fleet armed until told otherwise. */
export function newRollout({ agent, current }: { agent: string; current: string }): RolloutState {
  return { agent, phase: 'idle', current, share: 0, checks: [], minRuns: 1, rollouts: 0, fleet: 'armed', history: [], nextEntryId: 1 };
}

/** The version every new wake outside the ramp gets now: the candidate once promoted, else the current one. */
export const liveVersion = (m: RolloutState): string => (m.phase === 'promoted' && m.candidate ? m.candidate : m.current);

/** A held or halted fleet holds the rollout: no start, step or promote, and evidence is not acted on. */
export const fleetHeld = (m: RolloutState): boolean => m.fleet !== 'armed';

export const iso = (ms: number): string => new Date(ms).toISOString();

/** Record an accepted move in the history (the last KEPT kept). */
export function record(turn: Turn, entry: Omit<RolloutEntry, 'id' | 'rollout' | 'at' | 'atMs' | 'candidate' | 'share'>): RolloutEntry {
  const { m, nowMs } = turn;
  const full: RolloutEntry = {
    id: m.nextEntryId++,
    rollout: m.rollouts,
    at: iso(nowMs),
    atMs: nowMs,
    candidate: m.candidate ?? '',
    share: m.share,
    ...entry,
  };
  m.history.push(full);
  if (m.history.length > KEPT) m.history.splice(0, m.history.length - KEPT);
  return full;
}

/** The rollout in a few words: "ramping v2 to 20% (current v1)". */
export function describe(m: RolloutState): string {
  switch (m.phase) {
    case 'idle':
      return `no rollout: every wake runs ${m.current}`;
    case 'ramping':
      return `ramping ${m.candidate} to ${pct(m.share)} of wake keys (current ${m.current})`;
    case 'promoted':
      return `${m.candidate} promoted: every new wake runs it`;
    case 'rolled_back':
      return `${m.candidate} rolled back: every new wake runs ${m.current}`;
  }
}

export const answer = (m: RolloutState, accepted: boolean, message: string): RolloutReply => ({ accepted, message, phase: m.phase, share: m.share });
