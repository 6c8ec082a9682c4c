import type { HaltRequest, PersonAction, ReleaseRecord, ReleaseRequest } from '../../src/core/supervisor-types';
import { iso, log, sawActivity, trim, type Input, type MachineState, type Turn } from './state';
import { trip } from './trips';

/*
 * A person's actions: reset the breaker, halt or drain, release or discard held wakes. Each needs a
 * name and a reason, and is recorded.
 */

/** Why the machine refuses an input before it is taken (an update's validator), or undefined when it takes it. */
export function refusal(m: MachineState, input: Input): string | undefined {
  const person = (p: { who?: unknown; reason?: unknown }) =>
    typeof p.who !== 'string' || !p.who.trim() || typeof p.reason !== 'string' || !p.reason.trim()
      ? "a person's action needs a name (who) and a reason"
      : undefined;
  switch (input.kind) {
    case 'lease':
      return !input.requests || typeof input.requests !== 'object' ? 'lease needs requests' : undefined;
    case 'reset':
      return person(input) ?? (m.mode === 'armed' ? 'the breaker is armed: nothing to reset' : undefined);
    case 'halt':
      return person(input);
    case 'release':
      if (person(input)) return person(input);
      if (input.action !== 'release' && input.action !== 'discard') return 'action is release or discard';
      if (input.action === 'release' && m.mode !== 'armed') {
        return `the breaker is ${m.mode} (trip #${m.trip?.id}: ${m.trip?.reason}): reset it first (wakegate supervisor reset --who --reason), then release`;
      }
      return undefined;
    default:
      return undefined;
  }
}

/**
 * A person resets a tripped or halted breaker: it arms again. The storm and error counts that
 * tripped it start afresh (a person has looked); spend and permits stay (the rolling budgets do not
 * forgive what was spent). Held wakes stay held until a release or a discard.
 */
export function reset(turn: Turn, { who, reason }: PersonAction): void {
  const { m, nowMs } = turn;
  m.resets.push({ tripId: m.trip?.id ?? 0, who, reason, at: iso(nowMs) });
  trim(m.resets);
  log(turn, 'info', 'supervisor reset', { tripId: m.trip?.id, who, reason });
  m.mode = 'armed';
  m.armedSinceMs = nowMs;
  delete m.trip;
  for (const name of Object.keys(m.series)) if (/^(storm|runs|errors):/.test(name)) delete m.series[name];
}

/** A person halts (live runs stopped) or drains (live runs finish). A halt during a drain stops the live runs after all. */
export function halt(turn: Turn, { who, reason, drain }: HaltRequest): void {
  const { m } = turn;
  if (m.mode === 'armed') trip(turn, drain ? 'drain' : 'halt', `${drain ? 'drained' : 'halted'} by ${who}: ${reason}`, { who, reason });
  else if (!drain) {
    if (m.mode === 'draining') m.mode = 'halted';
    turn.actions.push({ kind: 'stop', who, reason: `halted by ${who}: ${reason}` });
  }
}

/** A person releases held wakes (the breaker armed) or discards them: recorded, and the held runs are nudged to re-check. */
export function release(turn: Turn, { who, reason, action, agent }: ReleaseRequest): ReleaseRecord {
  const { m, nowMs } = turn;
  const r: ReleaseRecord = { id: m.nextReleaseId++, action, ...(agent ? { agent } : {}), who, reason, at: iso(nowMs), atMs: nowMs };
  m.releases.push(r);
  trim(m.releases);
  turn.actions.push({ kind: 'nudge', ...(agent ? { agent } : {}) });
  // The released runs go on now: a watch sees them to their close.
  sawActivity(m, nowMs);
  log(turn, 'info', 'supervisor release', { ...r });
  return r;
}
