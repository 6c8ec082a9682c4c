import { coalescedEvents, finish, oneCallEvents } from './events';
import type { Recorded } from './recorded';
import { pendingRun, trailRun } from './runs';
import type { TrailCoalescer, TrailRun, WakeTrail } from './types';

/** How much a trail lists. */
export interface TrailCaps {
  /** Events listed, newest kept. */
  maxEvents: number;
}

/** What no record holds, so no trail can show it: said in every trail and in docs/OPERATIONS.md. */
export const NOT_RECORDED = {
  refused:
    '`refused` (the agent over a rolling cap with policy `refuse`): the gate starts nothing and records nothing; the sender was answered 429 (the CLI exits 3, the queue redelivers)',
  mismatch:
    '`mismatch` at the gate (an event key already used with other inputs): nothing is started and the refused inputs are not recorded; only a mismatch the coalescer found is',
  redelivered:
    'a redelivery answered from a finished run (`completed`) leaves no record; redeliveries while the event was pending or its run open are among its delivery ids, without their arrival times',
  coalescer:
    "the coalescer keeps each event's decision for its dedup horizon (within a size bound), and its last 500 answers, 20 stale events and 10 runs; an older event shows only through the run that took it, an older stale one not at all, and one taken by signal while no worker polled only once a worker has decided it",
} as const;

/**
 * The trail of one (agent, wake key) from what was read, with no Temporal in it: deterministic,
 * driven by src/trail/read.ts and by unit tests alike. Runs keep their recorded order of start; events
 * are sorted by arrival and cut to the newest `maxEvents`; events that arrived before the window
 * are left out; nothing is marked found unless an event or a run was recorded in the window.
 */
export function assembleTrail(r: Recorded, caps: TrailCaps): WakeTrail {
  const runs: TrailRun[] = r.runs.map(trailRun);
  const current = r.coalescers.at(-1);
  const pending = current?.state?.pending;
  if (pending && !runs.some((x) => x.runKey === pending.runKey)) runs.push(pendingRun(pending, current?.policy));
  runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  const byKey = new Map(runs.map((x) => [x.runKey, x]));

  const drafts = r.path === 'coalescing' ? coalescedEvents(r) : oneCallEvents(r.runs);
  const sinceMs = Date.parse(r.since);
  const when = (e: { arrivedAt: string | null; runKey?: string; occurredAt: string }) =>
    e.arrivedAt ?? (e.runKey ? byKey.get(e.runKey)?.startedAt : undefined) ?? e.occurredAt;
  const inWindow = drafts.filter((d) => d.arrivedAt === null || Date.parse(d.arrivedAt) >= sinceMs);
  const sorted = inWindow.map((d) => finish(d, byKey)).sort((a, b) => when(a).localeCompare(when(b)) || a.eventKey.localeCompare(b.eventKey));
  const events = sorted.slice(Math.max(0, sorted.length - caps.maxEvents));

  const found = events.length > 0 || runs.length > 0;
  return {
    agent: r.agent,
    wakeKey: r.wakeKey,
    path: r.path,
    window: { since: r.since, until: r.until },
    found,
    events,
    eventsNotListed: sorted.length - events.length + r.eventsNotRead,
    runs,
    runsNotListed: r.runsNotRead,
    ...(current ? { coalescer: coalescerOf(current) } : {}),
    looked: r.looked,
    notRecorded: r.path === 'coalescing' ? Object.values(NOT_RECORDED) : [NOT_RECORDED.refused, NOT_RECORDED.mismatch, NOT_RECORDED.redelivered],
  };
}

function coalescerOf(c: Recorded['coalescers'][number]): TrailCoalescer {
  return {
    coalescerId: c.workflowId,
    status: c.status,
    readVia: c.readVia,
    // Counts are the coalescer's own only when it answered, or closed with them.
    ...(c.state && (c.readVia === 'query' || c.readVia === 'result') ? { counts: c.state.counts } : {}),
    ...(c.policy ? { policy: { debouncePeriodMs: c.policy.debouncePeriodMs, maxWaitMs: c.policy.maxWaitMs, whileRunning: c.policy.whileRunning } } : {}),
  };
}
