import type { RunObservation } from '../../src/core/supervisor-types';
import { addTo, prune } from './sliding-window';
import {
  FLEET,
  OBSERVE_LIMIT,
  SETTLE_MS,
  breakerWatches,
  capSeries,
  capsOf,
  iso,
  log,
  ACTIVE_AFTER_MS,
  sawClosures,
  seriesOf,
  type MachineState,
  type Turn,
  type VisibilityFailure,
} from './state';
import { checkErrorRate } from './trips';
import { shadowedAgent } from '../../src/core/shadow';

/*
 * Reading the runs that closed (visibility: terminal reason, tokens, cost) every `observeEveryMs` or
 * a few times that while the fleet is active (`observeRoundMs`): an error rate over the threshold trips the breaker, and their spend
 * counts against the caps. Without a visibility API there is nothing to read: the supervisor goes
 * on with wakes, leases and people only.
 */

/**
 * A visibility call answered or failed. Its failure never ends the supervisor (a failed supervisor
 * would lose the sticky halt): it is recorded for status and logged once, and the next round tries again.
 */
export function visibilityAnswered(turn: Turn, what: string, failed: VisibilityFailure | undefined): void {
  const { m, nowMs } = turn;
  if (!failed) {
    if (m.visibilityError && !m.visibilityError.unavailable) delete m.visibilityError;
    return;
  }
  const message = `could not ${what}: ${failed.message}`;
  if (m.visibilityError?.message === message) {
    // said once
  } else if (failed.unavailable) {
    // A server without visibility (the time-skipping test server) is not a fault: say what is off, once.
    log(turn, 'info', 'supervisor: this server has no visibility API: closed runs are not read, so the error-rate breaker and the spend caps see none', {
      err: message,
    });
  } else log(turn, 'error', 'supervisor: visibility call failed', { err: message });
  m.visibilityError = { at: iso(nowMs), message, ...(failed.unavailable ? { unavailable: true } : {}) };
}

/**
 * The fleet is active for ACTIVE_AFTER_MS after wakes, leases or closed runs came, and until a new
 * supervisor's first read of closed runs is done; idle, the supervisor reads every IDLE_OBSERVE_MS
 * and a wake or a lease makes it active again.
 */
export const isActive = (m: MachineState, nowMs: number): boolean =>
  !m.visibilityError?.unavailable && (m.lastObservedAt === undefined || nowMs - m.lastActivityMs < ACTIVE_AFTER_MS);

/** The longest wait between two reads of closed runs while the fleet is active but quiet, ms (or `observeEveryMs`, if longer). */
export const MAX_QUIET_OBSERVE_MS = 60_000;

/**
 * How long an idle fleet's supervisor waits between reads, ms: a hand-terminated coalescer's pending
 * events (recovered in the same round) and a run closing long after its lease are found within it,
 * at two actions a read, 24 an hour.
 */
export const IDLE_OBSERVE_MS = 5 * 60_000;

/**
 * How long after the last read the next is due, ms: while the fleet is active, a round
 * (`observeEveryMs`) doubled `quietRounds` times, to MAX_QUIET_OBSERVE_MS: a read that found none
 * doubles it; runs starting bring it to at most STARTING_ROUNDS doublings; a read that found the
 * breaker's `minRuns` or more halves it (./state.ts). Idle, IDLE_OBSERVE_MS. Each read is an activity
 * and a timer in the supervisor's history.
 */
export function observeRoundMs(m: MachineState, nowMs: number): number {
  const every = m.policy.observeEveryMs;
  if (!isActive(m, nowMs)) return Math.max(every, IDLE_OBSERVE_MS);
  return Math.min(every * 2 ** Math.min(m.quietRounds ?? 0, 20), Math.max(every, MAX_QUIET_OBSERVE_MS));
}

/** When the next read of closed runs is due (epoch ms): a round after the last, and after a failed read a whole round too. */
export const nextObserveMs = (m: MachineState, nowMs: number): number =>
  Math.max(m.observedToMs + SETTLE_MS, m.lastObserveAttemptMs) + observeRoundMs(m, nowMs);

/** Ask for the runs closed since the last read, when its round is due. */
export function observeIfDue(turn: Turn): void {
  const { m, nowMs } = turn;
  const toMs = nowMs - SETTLE_MS;
  if (nowMs < nextObserveMs(m, nowMs) || toMs <= m.observedToMs || m.visibilityError?.unavailable) return;
  m.lastObserveAttemptMs = nowMs;
  turn.actions.push({ kind: 'observe', fromMs: m.observedToMs, toMs, limit: OBSERVE_LIMIT });
}

/** Closed runs read (or not): counted for the error rate and against the caps, and the error rate checked. */
export function observed(turn: Turn, toMs: number, read: RunObservation | undefined, failed: VisibilityFailure | undefined): void {
  const { m, nowMs } = turn;
  visibilityAnswered(turn, 'read closed runs', failed);
  if (failed || !read) {
    m.quietRounds = (m.quietRounds ?? 0) + 1;
    return;
  }
  const { closures, truncated } = read;
  const er = m.policy.errorRate;
  for (const c of closures) {
    for (const { scope, cap } of capsOf(m.policy, c.agent)) {
      if (cap.costUsd !== undefined) addTo(capSeries(m, scope, cap, 'usd'), c.closeMs, c.costUsd, nowMs);
      if (cap.tokens !== undefined) addTo(capSeries(m, scope, cap, 'tokens'), c.closeMs, c.tokens, nowMs);
    }
    // A live shadow's spend counts against the shadow caps only; its outcome is not production's error rate.
    if (shadowedAgent(c.agent) !== undefined) continue;
    const bad = er.reasons.includes(c.reason) ? 1 : 0;
    for (const scope of [FLEET, c.agent]) {
      addTo(seriesOf(m, `runs:${scope}`, er.windowMs), c.closeMs, 1, nowMs);
      addTo(seriesOf(m, `errors:${scope}`, er.windowMs), c.closeMs, bad, nowMs);
    }
    addTo(seriesOf(m, `reason:${c.reason}`, er.windowMs), c.closeMs, 1, nowMs);
  }
  m.observedToMs = truncated && closures.length ? closures[closures.length - 1]!.closeMs : toMs;
  m.lastObservedAt = iso(nowMs);
  if (closures.length) sawClosures(m, nowMs, closures.length);
  else m.quietRounds = (m.quietRounds ?? 0) + 1;
  // A read cut at its limit reads on a round later.
  if (truncated && closures.length) m.quietRounds = 0;
  if (breakerWatches(m)) checkErrorRate(turn);
}

/** Drop what has slid out of every window, and the series left empty (but a cap's permits). */
export function pruneSeries(m: MachineState, nowMs: number): void {
  for (const s of Object.values(m.series)) prune(s, nowMs);
  for (const [name, s] of Object.entries(m.series)) if (!s.buckets.length && !name.startsWith('permits:')) delete m.series[name];
}
