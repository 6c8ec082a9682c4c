import type { Trip, TripKind } from '../../src/core/supervisor-types';
import { addTo, sumOf } from './sliding-window';
import { FLEET, STORM_WINDOW_MS, WAKE_HISTORY_MS, breakerWatches, iso, log, sawActivity, selfId, seriesOf, trim, type Turn } from './state';
import { counterRecord } from './status';

/*
 * The breaker: a storm of wakes or a high error rate trips it, and so does a person's halt or drain.
 * A trip is sticky until a person resets it.
 */

/** How a person puts things right, in every trip's page. */
const HOW_TO_RESET =
  'wakegate supervisor status; wakegate supervisor reset --who <you> --reason <what you fixed>; then wakegate supervisor release --who <you> --reason <why> (or discard)';

/**
 * Trip the breaker. A storm or an error rate pages, and stops the live runs of agents whose policy
 * says `cancel`; a person's halt stops every live run; a drain lets them finish. Nothing trips a
 * halted breaker again. A storm or an error rate during a person's drain turns it into a halt (and
 * pages): the drain lets live runs finish, not fail at a high rate or go unnoticed under a looping upstream.
 */
export function trip(turn: Turn, kind: TripKind, reason: string, by?: { who: string; reason: string }): void {
  const { m, nowMs } = turn;
  if (m.mode === 'halted' || (m.mode === 'draining' && kind !== 'storm' && kind !== 'error_rate')) return;
  if (m.mode === 'draining') reason = `${reason} (during trip #${m.trip?.id}, a drain: now halted)`;
  m.mode = kind === 'drain' ? 'draining' : 'halted';
  const t: Trip = { id: m.nextTripId++, kind, at: iso(nowMs), reason, counters: counterRecord(m, nowMs), ...(by ? { by } : {}) };
  m.trip = t;
  m.trips.push(t);
  trim(m.trips);
  log(turn, 'warn', 'supervisor tripped', { tripId: t.id, kind, reason });
  if (kind === 'storm' || kind === 'error_rate') {
    turn.actions.push({
      kind: 'page',
      tripId: t.id,
      page: {
        dedupKey: `wakegate/${selfId(m)}/trip-${t.id}`,
        summary: `wakegate halted (trip #${t.id}, ${kind}): ${reason}. Every new wake is held until a person resets it.`,
        severity: 'critical',
        source: `wakegate supervisor (task queue ${m.taskQueue})`,
        details: { tripId: t.id, kind, reason, at: t.at, counters: t.counters, howToReset: HOW_TO_RESET },
      },
    });
    const cancel = Object.entries(m.policy.onTrip)
      .filter(([, v]) => v === 'cancel')
      .map(([a]) => a);
    if (cancel.length) turn.actions.push({ kind: 'stop', agents: cancel, who: 'supervisor', reason: `trip #${t.id}: ${reason}` });
  }
  if (kind === 'halt' && by) turn.actions.push({ kind: 'stop', who: by.who, reason: `halted by ${by.who}: ${by.reason}` });
}

/** Wakes the gate admitted, per agent: counted over the last minute, and a storm over a threshold trips the breaker. */
export function countWakes(turn: Turn, counts: Record<string, number>, lastAtMs?: number): void {
  const { m, nowMs } = turn;
  // Their runs were open from when the newest was admitted (the sender says when; never later than now).
  sawActivity(m, Math.min(nowMs, lastAtMs ?? nowMs));
  const { storm } = m.policy;
  for (const [agent, n] of Object.entries(counts)) {
    addTo(seriesOf(m, `storm:${FLEET}`, STORM_WINDOW_MS), nowMs, n, nowMs);
    addTo(seriesOf(m, `storm:${agent}`, STORM_WINDOW_MS), nowMs, n, nowMs);
    addTo(seriesOf(m, `wakes:${FLEET}`, WAKE_HISTORY_MS), nowMs, n, nowMs);
    addTo(seriesOf(m, `wakes:${agent}`, WAKE_HISTORY_MS), nowMs, n, nowMs);
    if (!breakerWatches(m)) continue;
    const fleet = sumOf(m.series[`storm:${FLEET}`], nowMs);
    const mine = sumOf(m.series[`storm:${agent}`], nowMs);
    if (fleet > storm.fleetPerMinute) trip(turn, 'storm', `${fleet} wakes in the last minute, over the fleet threshold of ${storm.fleetPerMinute}`);
    else if (storm.agentPerMinute !== undefined && mine > storm.agentPerMinute) {
      trip(turn, 'storm', `${mine} wakes of ${agent} in the last minute, over the per-agent threshold of ${storm.agentPerMinute}`);
    }
  }
}

/** The share of recent runs (fleet-wide, then per agent) that ended in an error reason: over the threshold, with enough runs, trips. */
export function checkErrorRate(turn: Turn): void {
  const { m, nowMs } = turn;
  const er = m.policy.errorRate;
  const scopes = Object.keys(m.series)
    .filter((n) => n.startsWith('runs:'))
    .map((n) => n.slice(5));
  for (const scope of scopes) {
    const runs = sumOf(m.series[`runs:${scope}`], nowMs);
    const errors = sumOf(m.series[`errors:${scope}`], nowMs);
    if (runs >= er.minRuns && errors / runs > er.threshold) {
      const who = scope === FLEET ? 'the fleet' : scope;
      trip(
        turn,
        'error_rate',
        `${errors} of the last ${runs} runs of ${who} ended ${er.reasons.join('/')} (${Math.round((errors / runs) * 100)}%), over ${Math.round(er.threshold * 100)}%`,
      );
      return;
    }
  }
}
