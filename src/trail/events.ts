import type { OfferAnswer, SeenEvent } from '../core/coalesce-types';
import { batchRunKey, seenRunToken } from '../core/ids';
import type { AbsorbedEvent } from '../core/run-types';
import { parseEventKey } from '../gate/keys';
import { isoSeconds } from '../core/time';
import type { Recorded, RecordedRun } from './recorded';
import { absorbedOf, runEventOf, runInputOf, skippedOf, steeredOf } from './runs';
import type { TrailDecision, TrailEvent, TrailRun } from './types';

/** An event while it is being put together from several records. */
type Draft = Omit<TrailEvent, 'reason' | 'recordedBy'> & { recordedBy: Set<string>; steerRefused?: boolean };

/** Event details from a record that lists it (a run, the coalescer's batch or stale list). */
type Details = Pick<AbsorbedEvent, 'eventKey' | 'source' | 'type' | 'entity' | 'occurredAt' | 'deliveryIds' | 'deliveryCount' | 'version'>;

class Drafts {
  readonly byKey = new Map<string, Draft>();

  /** The event's draft, made from `details` (or from its key alone) the first time it is named. */
  get(eventKey: string, details: Details | undefined, decision: TrailDecision, by: string): Draft {
    let d = this.byKey.get(eventKey);
    if (!d) {
      const parts = parseEventKey(eventKey);
      d = {
        eventKey,
        source: details?.source ?? parts?.source ?? '?',
        type: details?.type ?? parts?.type ?? '?',
        entity: details?.entity ?? parts?.entity ?? '?',
        // Named only by its key: the key's time bucket is what is recorded of when it happened.
        occurredAt: details?.occurredAt ?? (parts ? isoSeconds(parts.bucketStartMs) : ''),
        arrivedAt: null,
        deliveryIds: [],
        decision,
        recordedBy: new Set(),
      };
      this.byKey.set(eventKey, d);
    }
    if (details) this.merge(d, details);
    d.recordedBy.add(by);
    return d;
  }

  merge(d: Draft, details: Details): void {
    if (details.version !== undefined && d.version === undefined) d.version = details.version;
    for (const id of details.deliveryIds ?? []) if (!d.deliveryIds.includes(id)) d.deliveryIds.push(id);
    // Each record counts the same deliveries (those it let go too): the largest count stands.
    const count = Math.max(d.deliveryCount ?? 0, details.deliveryCount ?? 0);
    if (count > d.deliveryIds.length) d.deliveryCount = count;
  }
}

/** Take the coalescer's answer as the event's decision, with the run and version it names. */
function answer(d: Draft, a: Pick<OfferAnswer, 'decision' | 'runKey' | 'newestVersion'>): void {
  d.decision = a.decision;
  if (a.runKey) d.runKey = a.runKey;
  if (a.newestVersion !== undefined) d.newestVersion = a.newestVersion;
}

/**
 * The events of a coalescing agent's wake key. The coalescer's dedup table holds each event's
 * decision as recorded, the run that took it and when (the event's arrival); its recent answers
 * cover events read from its history; the runs' lists (taken, skipped) and the coalescer's batch and
 * stale list add event details and the deliveries seen since, and events the coalescer no longer lists.
 */
export function coalescedEvents(r: Recorded): Draft[] {
  const drafts = new Drafts();
  for (const c of r.coalescers) {
    // Compact entries (strings: a hash in place of the key) name no event; the newest are in full.
    for (const [eventKey, , atMs, decision, stored] of (c.state?.seen ?? []).filter((r): r is SeenEvent => typeof r !== 'string')) {
      const d = drafts.get(eventKey, undefined, decision, 'coalescer');
      d.arrivedAt = new Date(atMs).toISOString();
      d.decision = decision;
      const token = seenRunToken(eventKey, stored);
      if (decision !== 'stale' && token) d.runKey = batchRunKey(r.agent, r.wakeKey, token);
    }
    for (const { eventKey, answer: a } of c.state?.recent ?? []) {
      const known = drafts.byKey.get(eventKey);
      const d = drafts.get(eventKey, undefined, a.decision, 'coalescer');
      // The dedup table's entry stands (a later answer to the same key may be a mismatch); the recent answers fill in the rest.
      if (!known || known.decision === 'accepted') answer(d, a);
      else if (a.newestVersion !== undefined) d.newestVersion = a.newestVersion;
    }
    for (const e of [...(c.state?.staleEvents ?? []), ...(c.state?.pending?.events ?? []), ...(c.state?.running?.events ?? [])]) {
      // A live run's event kept by its key alone past a continue-as-new has no details to give.
      if (drafts.byKey.has(e.eventKey)) drafts.get(e.eventKey, 'source' in e ? e : undefined, 'accepted', 'coalescer');
    }
  }
  // A run's lists and the pending batch say where an event went: its decision, when no answer was read.
  const took = (e: Details, decision: TrailDecision, runKey: string, by: string) => {
    const d = drafts.get(e.eventKey, e, decision, by);
    if (d.runKey === undefined || d.decision === 'accepted') Object.assign(d, { decision, runKey });
  };
  // Overlap `steer`: the run an event was steered into, or, when that run refused it (it had begun
  // committing), the follow-up run that took it instead.
  const takenBy = new Map<string, string>();
  const steer = (e: Details & { steeredFrom?: string }, runKey: string) => {
    const d = drafts.byKey.get(e.eventKey);
    // The run it was steered into first, when another took it (the coalescer's entry names the latter).
    if (d?.decision === 'steered' && e.steeredFrom && e.steeredFrom !== runKey) d.runKey = e.steeredFrom;
    if (d?.decision === 'steered' && d.runKey !== runKey) d.finalRunKey = runKey;
    takenBy.set(e.eventKey, runKey);
  };
  for (const run of r.runs) {
    const opener = runInputOf(run)?.eventKey;
    const steered = new Set(steeredOf(run));
    for (const e of absorbedOf(run)) {
      took(e, e.eventKey === opener ? 'started' : steered.has(e.eventKey) ? 'steered' : 'coalesced', run.workflowId, 'run');
      steer(e, run.workflowId);
    }
    for (const e of skippedOf(run)) took(e, 'skipped', run.workflowId, 'run');
  }
  const pending = r.coalescers.at(-1)?.state?.pending;
  for (const e of pending?.events ?? []) {
    took(e, e.eventKey === pending!.openedBy ? 'started' : 'coalesced', pending!.runKey, 'coalescer');
    steer(e, pending!.runKey);
  }
  // A steered event that its run does not list once closed, and no other run took yet: refused, waiting.
  for (const d of drafts.byKey.values()) {
    const into = d.decision === 'steered' && d.runKey ? r.runs.find((x) => x.workflowId === d.runKey) : undefined;
    if (into && into.status !== 'RUNNING' && !takenBy.has(d.eventKey)) d.steerRefused = true;
  }
  return [...drafts.byKey.values()];
}

/** The events of a one-call agent's wake key: each run is one event's, arriving when the run started. */
export function oneCallEvents(runs: readonly RecordedRun[]): Draft[] {
  const drafts = new Drafts();
  for (const run of runs) {
    const event = runEventOf(run);
    if (!event) continue;
    const d = drafts.get(event.eventKey, { ...event, deliveryIds: [] }, 'started', 'run');
    d.arrivedAt ??= run.startedAt;
    d.runKey = run.workflowId;
    const delivered = run.result?.deliveryIds ?? run.live?.deliveryIds ?? run.indexed?.deliveryIds ?? (event.deliveryId ? [event.deliveryId] : []);
    const count = run.result?.deliveryCount ?? run.live?.deliveryCount;
    drafts.merge(d, { ...event, deliveryIds: delivered, ...(count !== undefined ? { deliveryCount: count } : {}) });
    if (run.result?.terminalReason === 'duplicate') d.decision = 'completed';
  }
  return [...drafts.byKey.values()];
}

/** Follow a run cancelled for a restart (overlap `cancel`) to the run that finally took its events. */
function finalRun(runKey: string, runs: ReadonlyMap<string, TrailRun>): string {
  let key = runKey;
  for (let hop = 0; hop < 20; hop++) {
    const next = runs.get(key)?.supersededBy;
    if (!next) break;
    key = next;
  }
  return key;
}

/**
 * Every decision in words, from the records alone. A `started` event whose run a halt held (before
 * its first step) is `held`, as the gate answered it; a window answered from the run that had taken it is `completed`.
 */
export function finish(d: Draft, runs: ReadonlyMap<string, TrailRun>): TrailEvent {
  const run = d.runKey ? runs.get(d.runKey) : undefined;
  let decision = d.decision;
  let tripId: number | undefined;
  if (decision === 'started' && run?.held?.hold === 'halted') {
    decision = 'held';
    tripId = run.held.tripId;
  }
  const final = d.finalRunKey ?? (d.runKey ? finalRun(d.runKey, runs) : undefined);
  const { recordedBy, steerRefused: _s, ...rest } = d;
  return {
    ...rest,
    decision,
    reason: reasonOf(d, decision, run),
    ...(final && final !== d.runKey ? { finalRunKey: final } : {}),
    ...(tripId !== undefined ? { tripId } : {}),
    recordedBy: [...recordedBy].sort(),
  };
}

function reasonOf(d: Draft, decision: TrailDecision, run: TrailRun | undefined): string {
  const runName = d.runKey ?? 'an unnamed run';
  const state =
    run?.status === 'PENDING' ? `, pending until ${run.closedAt ?? 'the debounce ends'}` : run?.terminalReason ? `, which ended ${run.terminalReason}` : '';
  switch (decision) {
    case 'started':
      return d.recordedBy.has('coalescer') ? `opened the batch of run ${runName}${state}` : `started run ${runName}${state}`;
    case 'coalesced':
      return `coalesced into run ${runName}${state}`;
    case 'skipped':
      return `skipped while run ${runName} was live (overlap skip); recorded on that run, nothing ran for it`;
    case 'steered':
      if (d.finalRunKey)
        return `offered to live run ${runName} (overlap steer), which had begun committing and refused it; follow-up run ${d.finalRunKey} took it`;
      if (d.steerRefused) return `offered to live run ${runName} (overlap steer), which had begun committing and refused it; waiting for its follow-up run`;
      return `steered into live run ${runName}${state} (overlap steer): its model was given the event before its next turn`;
    case 'stale':
      return `stale: version ${d.version ?? '?'} is behind version ${d.newestVersion ?? '?'} already seen from ${d.source}; recorded, nothing ran`;
    case 'mismatch':
      return `mismatch: ${runName} holds this event key with other inputs; nothing was taken`;
    case 'held': {
      const h = run?.held;
      const released = h?.releasedBy ? `; released by ${h.releasedBy.who} (${h.releasedBy.reason})` : h ? '; not released' : '';
      return `held${h?.tripId !== undefined ? ` by trip #${h.tripId}` : ''} before its first step: ${h?.reason ?? 'the supervisor was halted'}${released}`;
    }
    case 'completed':
      return `completed from run ${run?.takenBy ?? runName}: the window had already run, so nothing ran again`;
    case 'accepted':
      return `taken by its coalescer, which has not decided it yet (no worker had run it)`;
  }
}
