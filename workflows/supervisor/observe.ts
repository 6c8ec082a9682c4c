import type { RunObservation } from '../../src/core/supervisor-types';
import { addTo, prune, sumOf } from './sliding-window';
import {
  ACTIVE_AFTER_MS,
  FLEET,
  MAX_FAILED_READ_WAIT_MS,
  MIN_WATCH_QUIET_MS,
  OBSERVE_LIMIT,
  SETTLE_MS,
  WATCH_MAX_MS,
  WATCH_QUIET_ROUNDS,
  breakerWatches,
  capSeries,
  capSeriesName,
  capsOf,
  iso,
  log,
  seriesOf,
  type MachineState,
  type Turn,
  type VisibilityFailure,
} from './state';
import { allCaps } from '../../src/core/caps';
import type { WatchRequest } from '../../src/core/supervisor-requests';
import { checkErrorRate } from './trips';
import { shadowedAgent } from '../../src/core/shadow';

/*
 * Reading the runs that closed (visibility: terminal reason, tokens, cost): one watch per burst, an
 * activity that reads every `observeEveryMs` until the runs it saw open have closed (or what it read
 * would change a decision), then idle reads every IDLE_OBSERVE_MS. An error rate over the threshold
 * trips the breaker, and their spend counts against the caps. Without a visibility API there is
 * nothing to read: the supervisor goes on with wakes, leases and people only.
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
 * How long an idle fleet's supervisor waits between watches, ms: a hand-terminated coalescer's
 * pending events (recovered in the same read) and a run closing long after it started are found
 * within it, at two actions a read (the activity and the timer before it), 24 an hour.
 */
export const IDLE_OBSERVE_MS = 5 * 60_000;

/** The longest timer the supervisor starts while the fleet is active (a failed watch's backoff, a stop's retry), ms: longer ones are its idle reads'. */
export const MAX_QUIET_OBSERVE_MS = MAX_FAILED_READ_WAIT_MS;

/**
 * Whether a watch is due now, and the epoch ms it comes due otherwise: never while one is in flight
 * or without a visibility API. At once for a new supervisor's first read, after a watch cut short
 * with the burst not over (`moreToRead`), and when a wake, lease or release came after what the last
 * watch saw (`watchedToMs`); after failed watches, a round doubled per failure, to a minute; else
 * (idle) IDLE_OBSERVE_MS after the last read.
 */
export function nextObserveMs(m: MachineState): number | undefined {
  if (m.observing || m.visibilityError?.unavailable) return undefined;
  const earliest = m.observedToMs + SETTLE_MS;
  const failed = m.failedReads ?? 0;
  const wanted = m.lastObservedAt === undefined || m.moreToRead || m.lastActivityMs > (m.watchedToMs ?? -Infinity);
  if (failed > 0) {
    const backoff = Math.min(m.policy.observeEveryMs * 2 ** (failed - 1), MAX_FAILED_READ_WAIT_MS);
    return Math.max(earliest, m.lastObserveAttemptMs + (wanted ? backoff : Math.max(backoff, IDLE_OBSERVE_MS)));
  }
  if (wanted) return earliest;
  return Math.max(earliest, m.lastObserveAttemptMs) + Math.max(m.policy.observeEveryMs, IDLE_OBSERVE_MS);
}

/** A watch of closed runs from the last read on, when one is due: what would cut it short is what would change a decision now. */
export function observeIfDue(turn: Turn): void {
  const { m, nowMs } = turn;
  const due = nextObserveMs(m);
  if (due === undefined || nowMs < due) return;
  m.lastObserveAttemptMs = nowMs;
  m.observing = true;
  turn.actions.push({ kind: 'observe', fromMs: m.observedToMs, limit: OBSERVE_LIMIT, watch: watchRequest(m, nowMs) });
}

/** What a watch is told: its rounds, and what would change the machine's decision now (the error rate, the spend caps' room). */
export function watchRequest(m: MachineState, nowMs: number): WatchRequest {
  const every = m.policy.observeEveryMs;
  const er = m.policy.errorRate;
  const quietUntilMs = Math.max(0, ...Object.values(m.blocks ?? {}).flatMap((held) => held.filter((b) => b.n > 0).map((b) => b.untilMs)));
  const rooms: Record<string, number> = {};
  for (const { scope, cap } of allCaps(m.policy)) {
    for (const [what, limit] of [
      ['usd', cap.costUsd],
      ['tokens', cap.tokens],
    ] as const) {
      if (limit === undefined) continue;
      const room = limit - sumOf(m.series[capSeriesName(scope, cap, what)], nowMs);
      // A full cap holds already: more spend changes nothing until it slides.
      if (room > 0) rooms[capSeriesName(scope, cap, what)] = room;
    }
  }
  return {
    everyMs: every,
    quietMs: Math.max(MIN_WATCH_QUIET_MS, WATCH_QUIET_ROUNDS * every),
    activeMs: Math.max(ACTIVE_AFTER_MS, WATCH_QUIET_ROUNDS * every),
    maxMs: WATCH_MAX_MS,
    quietUntilMs,
    ...(breakerWatches(m) ? { trip: { reasons: er.reasons, runsToTrip: Math.max(0, er.minRuns - sumOf(m.series[`runs:${FLEET}`], nowMs)) } } : {}),
    ...(Object.keys(rooms).length ? { spend: { caps: m.policy.caps, rooms } } : {}),
  };
}

/** A watch came back (or failed): its closed runs counted for the error rate and against the caps, and the error rate checked. */
export function observed(turn: Turn, read: RunObservation | undefined, failed: VisibilityFailure | undefined): void {
  const { m, nowMs } = turn;
  m.observing = false;
  visibilityAnswered(turn, 'read closed runs', failed);
  if (failed || !read) {
    m.failedReads = (m.failedReads ?? 0) + 1;
    return;
  }
  delete m.failedReads;
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
  const toMs = read.toMs ?? nowMs - SETTLE_MS;
  m.observedToMs = Math.max(m.observedToMs, truncated && closures.length ? closures[closures.length - 1]!.closeMs : toMs);
  m.lastObservedAt = iso(nowMs);
  // What the watch saw open or closed; a one-off read (no `coveredToMs`) saw runs up to what it read.
  m.watchedToMs = Math.max(m.watchedToMs ?? -Infinity, read.coveredToMs ?? toMs);
  // Cut short with the burst not over (or cut at its limit): the next watch at once. Settled: idle.
  if (read.settled === false || (read.settled === undefined && (read.cut !== undefined || truncated))) m.moreToRead = true;
  else delete m.moreToRead;
  if (breakerWatches(m)) checkErrorRate(turn);
}

/** Drop what has slid out of every window, and the series left empty (but a cap's permits). */
export function pruneSeries(m: MachineState, nowMs: number): void {
  for (const s of Object.values(m.series)) prune(s, nowMs);
  for (const [name, s] of Object.entries(m.series)) if (!s.buckets.length && !name.startsWith('permits:')) delete m.series[name];
}
