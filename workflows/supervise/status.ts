import type { CounterView, SupervisorMemo, SupervisorStatus } from '../../core/supervisor-types';
import { sumOf } from './sliding-window';
import { FLEET, STORM_WINDOW_MS, capSeriesName, selfId, type MachineState } from './state';

/*
 * What the supervisor shows: its counters against every limit, its status (the query and the
 * answer to a person's reset or halt) and its memo. Read-only: a series that does not exist counts 0.
 */

/** Every counter against its cap or threshold, now. */
export function counters(m: MachineState, nowMs: number): CounterView[] {
  const { policy } = m;
  const sum = (name: string) => sumOf(m.series[name], nowMs);
  const out: CounterView[] = [];
  const storm = { name: 'wakes per minute', windowMs: STORM_WINDOW_MS, rationale: policy.storm.rationale };
  out.push({ ...storm, scope: FLEET, value: sum(`storm:${FLEET}`), limit: policy.storm.fleetPerMinute });
  if (policy.storm.agentPerMinute !== undefined) {
    for (const name of Object.keys(m.series).filter((n) => n.startsWith('storm:') && n !== `storm:${FLEET}`)) {
      out.push({ ...storm, scope: name.slice(6), value: sum(name), limit: policy.storm.agentPerMinute });
    }
  }
  const caps = [
    ...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })),
    ...Object.entries(policy.caps.agents).flatMap(([scope, cs]) => cs.map((cap) => ({ scope, cap }))),
  ];
  for (const { scope, cap } of caps) {
    const base = { scope, windowMs: cap.windowMs, rationale: cap.rationale };
    const v = (what: 'permits' | 'usd' | 'tokens') => sum(capSeriesName(scope, cap, what));
    if (cap.wakes !== undefined) out.push({ ...base, name: 'runs started', value: v('permits'), limit: cap.wakes });
    if (cap.costUsd !== undefined) out.push({ ...base, name: 'spend USD', value: Math.round(v('usd') * 1e6) / 1e6, limit: cap.costUsd });
    if (cap.tokens !== undefined) out.push({ ...base, name: 'tokens', value: v('tokens'), limit: cap.tokens });
  }
  const er = policy.errorRate;
  const runs = sum(`runs:${FLEET}`);
  const errors = sum(`errors:${FLEET}`);
  out.push({
    name: `error rate (runs ended ${er.reasons.join('/')}, of ${runs})`,
    scope: FLEET,
    windowMs: er.windowMs,
    value: runs ? Math.round((errors / runs) * 1000) / 1000 : 0,
    limit: er.threshold,
    rationale: er.rationale,
  });
  return out;
}

/** The counters as one record, for a trip and a page. */
export const counterRecord = (m: MachineState, nowMs: number): Record<string, number> =>
  Object.fromEntries(counters(m, nowMs).map((c) => [`${c.name} [${c.scope}]`, c.value]));

/** The supervisor's status: its query, and the answer to a person's reset or halt. */
export function statusOf(m: MachineState, nowMs: number): SupervisorStatus {
  const recentRuns: Record<string, number> = {};
  for (const [name, s] of Object.entries(m.series)) {
    if (name.startsWith('reason:')) {
      const v = sumOf(s, nowMs);
      if (v) recentRuns[name.slice(7)] = v;
    }
  }
  return {
    supervisorId: selfId(m),
    mode: m.mode,
    ...(m.trip ? { trip: m.trip } : {}),
    trips: m.trips,
    resets: m.resets,
    releases: m.releases,
    counters: counters(m, nowMs),
    capHolds: m.capHolds,
    recentRuns,
    ...(m.lastObservedAt ? { lastObservedAt: m.lastObservedAt } : {}),
    ...(m.visibilityError ? { visibilityError: m.visibilityError } : {}),
    policy: m.policy,
  };
}

/** What every process reads (the gate cached, a run's first step afresh): mode, trip, caps full, releases. */
export const memoOf = (m: MachineState): SupervisorMemo => ({
  mode: m.mode,
  ...(m.trip ? { tripId: m.trip.id, tripReason: m.trip.reason } : {}),
  capsFull: Object.keys(m.capHolds),
  releases: m.releases,
  ...(m.armedSinceMs ? { armedSinceMs: m.armedSinceMs } : {}),
});
