import type { CounterView, SeriesState, SupervisorMemo, SupervisorStatus } from '../../src/core/supervisor-types';
import { newSeries, sumOf } from './sliding-window';
import { allCaps } from '../../src/core/caps';
import { policyHash } from '../../src/core/supervisor-policy';
import { FLEET, STORM_WINDOW_MS, WAKE_HISTORY_MS, capSeriesName, selfId, type MachineState } from './state';

/*
 * What the supervisor shows: its counters against every limit, its status (the query and the
 * answer to a person's reset or halt) and its memo. Read-only: a series that does not exist counts 0.
 */

/** A series' buckets that count now (as `sumOf` counts them), oldest first; none for a series not made yet. */
function bucketsOf(s: SeriesState | undefined, windowMs: number, nowMs: number): NonNullable<CounterView['buckets']> {
  if (!s) return { bucketMs: newSeries(windowMs).bucketMs, values: [] };
  return { bucketMs: s.bucketMs, values: s.buckets.filter(([start]) => start + s.bucketMs > nowMs - s.windowMs).map(([start, v]) => [start, v]) };
}

/** Every counter against its cap or threshold, now; with `charts`, each with the buckets of its window. */
export function counters(m: MachineState, nowMs: number, charts = false): CounterView[] {
  const { policy } = m;
  const sum = (name: string) => sumOf(m.series[name], nowMs);
  const window = (name: string, windowMs: number) => (charts ? { buckets: bucketsOf(m.series[name], windowMs, nowMs) } : {});
  const out: CounterView[] = [];
  const storm = { name: 'wakes per minute', windowMs: STORM_WINDOW_MS, rationale: policy.storm.rationale };
  const stormOf = (series: string) => ({ ...storm, value: sum(series), ...window(series, STORM_WINDOW_MS) });
  out.push({ ...stormOf(`storm:${FLEET}`), scope: FLEET, limit: policy.storm.fleetPerMinute });
  if (policy.storm.agentPerMinute !== undefined) {
    for (const name of Object.keys(m.series).filter((n) => n.startsWith('storm:') && n !== `storm:${FLEET}`)) {
      out.push({ ...stormOf(name), scope: name.slice(6), limit: policy.storm.agentPerMinute });
    }
  }
  for (const { scope, cap } of allCaps(policy)) {
    const base = { scope, windowMs: cap.windowMs, rationale: cap.rationale };
    const v = (what: 'permits' | 'usd' | 'tokens') => sum(capSeriesName(scope, cap, what));
    const w = (what: 'permits' | 'usd' | 'tokens') => window(capSeriesName(scope, cap, what), cap.windowMs);
    if (cap.wakes !== undefined) out.push({ ...base, name: 'runs started', value: v('permits'), limit: cap.wakes, ...w('permits') });
    if (cap.costUsd !== undefined) out.push({ ...base, name: 'spend USD', value: Math.round(v('usd') * 1e6) / 1e6, limit: cap.costUsd, ...w('usd') });
    if (cap.tokens !== undefined) out.push({ ...base, name: 'tokens', value: v('tokens'), limit: cap.tokens, ...w('tokens') });
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

/** Wakes that started a run at the gate per calendar minute over the last WAKE_HISTORY_MS, by scope (`*` and each agent), the current minute last. */
export function wakesPerMinute(m: MachineState, nowMs: number): Record<string, [number, number][]> {
  const current = nowMs - (nowMs % 60_000);
  // Every minute wholly inside the history's window, and the current one.
  const minutes = Array.from({ length: WAKE_HISTORY_MS / 60_000 }, (_, i) => current - (WAKE_HISTORY_MS / 60_000 - 1 - i) * 60_000);
  const out: Record<string, [number, number][]> = { [FLEET]: [] };
  for (const name of [`wakes:${FLEET}`, ...Object.keys(m.series).filter((n) => n.startsWith('wakes:') && n !== `wakes:${FLEET}`)]) {
    const per = new Map(minutes.map((start) => [start, 0]));
    for (const [start, v] of m.series[name]?.buckets ?? []) {
      const minute = start - (start % 60_000);
      if (per.has(minute)) per.set(minute, per.get(minute)! + v);
    }
    out[name.slice(6)] = [...per];
  }
  return out;
}

/**
 * The supervisor's status: its query, and the answer to a person's reset or halt. With `charts`
 * (the query), each counter carries its window's buckets and the status the wakes per minute, for
 * the `/supervisor` page; an update's answer, kept in the history, goes without them.
 */
export function statusOf(m: MachineState, nowMs: number, opts: { charts?: boolean } = {}): SupervisorStatus {
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
    counters: counters(m, nowMs, opts.charts),
    capHolds: m.capHolds,
    recentRuns,
    ...(m.lastObservedAt ? { lastObservedAt: m.lastObservedAt } : {}),
    ...(m.visibilityError ? { visibilityError: m.visibilityError } : {}),
    policy: m.policy,
    ...(opts.charts ? { atMs: nowMs, wakesPerMinute: wakesPerMinute(m, nowMs) } : {}),
  };
}

/** What every process reads (the gate cached, a run's first step afresh): mode, trip, caps full, releases. */
export const memoOf = (m: MachineState): SupervisorMemo => ({
  mode: m.mode,
  ...(m.trip ? { tripId: m.trip.id, tripReason: m.trip.reason } : {}),
  capsFull: Object.keys(m.capHolds),
  releases: m.releases,
  ...(m.armedSinceMs ? { armedSinceMs: m.armedSinceMs } : {}),
  policyHash: policyHash(m.policy),
  ...leasedUntil(m),
});

/** The end of the last block's hold and return grace, while a block holds permits. */
function leasedUntil(m: MachineState): { leasedUntilMs?: number } {
  const ends = Object.values(m.blocks ?? {}).flatMap((held) => held.filter((b) => b.n > 0).map((b) => b.untilMs));
  return ends.length ? { leasedUntilMs: Math.max(...ends) } : {};
}
