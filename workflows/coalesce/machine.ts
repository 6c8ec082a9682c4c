import type { Batch, CoalescerState, Offer, OfferAnswer, RunEnded, SeenEvent, SteerAnswer } from '../../core/coalesce-types';
import { batchRunId, coalescerId } from '../../core/ids';
import type { AbsorbedEvent } from '../../core/types';
import { charsOf, dueAt, eventChars, fitInto, hasRoom, initialState, record, runInputOf, SKIPPED_SIGNAL_EVERY_MS } from './batch';
import type { CoalescerIdentity, OfferedEvent, Step } from './batch';
import { SeenTable } from './seen';

export { BATCH_BUDGET_CHARS, SKIPPED_SIGNAL_EVERY_MS } from './batch';
export { dueAt, initialState, runInputOf, type CoalescerIdentity, type Step };

/** Answers kept for retried offers (by offer id) that cross a continue-as-new. */
const RECENT_ANSWERS = 500;
const RECENT_RUNS = 10;
const STALE_KEPT = 20;

/**
 * The coalescer's decisions, with no Temporal in them: deterministic, driven by the workflow shell
 * (workflow.ts) and by unit tests alike. Its `state` is the plain JSON the workflow carries across
 * continue-as-new and answers queries with; the signals it owes live runs are not part of it (the
 * shell hands them out before it continues as new).
 */
export class CoalescerMachine {
  readonly coalescerId: string;
  private owedSupersede?: { runKey: string; by: string };
  private owedSkipped: AbsorbedEvent[] = [];
  private skippedSignalAtMs = -Infinity;
  /** The dedup of events by key, over `state.seen`. */
  readonly seen: SeenTable;
  /** Overlap `steer`: events answered `steered` and not yet sent to that run (handed out before any continue-as-new). */
  private owedSteer?: { runKey: string; events: OfferedEvent[] };

  constructor(
    readonly self: CoalescerIdentity,
    readonly state: CoalescerState,
  ) {
    this.coalescerId = coalescerId(self.agent, self.wakeKey);
    this.seen = new SeenTable(state.seen, self.policy.dedupHorizonMs, (floorMs) => (state.seenFloorMs = Math.max(state.seenFloorMs ?? 0, floorMs)));
  }

  /** Neither a pending batch nor a live run. */
  get idle(): boolean {
    return !this.state.pending && !this.state.running;
  }

  /**
   * The decision for one offered event, in the order offers arrive (each sees the state the previous
   * one left):
   * - a retried offer (same event, same offer id: another update, or the fallback signal) gets its earlier answer again;
   * - an event already in the pending batch or the live run is never taken twice: `started` or
   *   `coalesced` as it was, or `mismatch` if this offer's inputs (fingerprint) differ from the held event's;
   * - an event the seen table holds (decided within the dedup horizon) gets that decision again, or `mismatch` on other inputs;
   * - a version older than the newest seen from the event's source is `stale`;
   * - with a live run: `skip` records the event on it (`skipped`); `buffer_one` gathers one follow-up
   *   batch; `cancel` opens a batch that takes the live run's events too and supersedes that run;
   *   `steer` sends it into the live run (`steered`) unless that run has refused a steer, is full, or a
   *   follow-up batch is already open: then it joins the follow-up batch, as `buffer_one`;
   * - otherwise the event joins the pending batch (`coalesced`) or opens one (`started`).
   */
  offer(offer: Offer, nowMs: number): OfferAnswer {
    const { state } = this;
    const e = offer.event;
    const retried = offer.offerId ? state.recent.find((r) => r.eventKey === e.eventKey && r.offerId === offer.offerId) : undefined;
    if (retried) return retried.answer;
    const held = this.heldAnswer(e);
    if (held) return this.remember(offer, held);
    const decided = this.seen.get(e.eventKey);
    if (decided) return this.remember(offer, this.seenAnswer(decided, e.fingerprint));
    const answer = this.decide(offer, nowMs);
    this.seen.add(e.eventKey, e.fingerprint, nowMs, answer.decision, answer.runKey && this.openerOf(answer.runKey));
    return this.remember(offer, answer);
  }

  /**
   * Forget the events a closed run took (a person re-armed it), so their next deliveries are decided
   * afresh. Not the live run's or the pending batch's: returns the event keys forgotten.
   */
  forgetRun(runKey: string): string[] {
    const { pending, running } = this.state;
    if (pending?.runKey === runKey || running?.runKey === runKey) return [];
    const opener = this.openerOf(runKey);
    const keys = this.state.seen.filter(([key, , , , openedBy]) => (openedBy ?? key) === opener).map(([key]) => key);
    for (const key of keys) this.seen.forget(key);
    this.state.recent = this.state.recent.filter((r) => !keys.includes(r.eventKey));
    return keys;
  }

  /** What the coalescer knows of one event key: its decision, or undefined when it has none within the horizon. */
  lookup(eventKey: string): (OfferAnswer & { decidedAtMs: number }) | undefined {
    const row = this.seen.get(eventKey);
    if (!row) return undefined;
    const { duplicate: _d, ...answer } = this.seenAnswer(row, undefined);
    const { pending, running } = this.state;
    const runState = pending?.runKey === answer.runKey ? 'pending' : running?.runKey === answer.runKey ? 'running' : undefined;
    return { ...answer, ...(runState ? { runState } : {}), decidedAtMs: row[2] };
  }

  /** The decision for an event this coalescer has not seen (within the dedup horizon). */
  private decide(offer: Offer, nowMs: number): OfferAnswer {
    const { state } = this;
    const e = offer.event;
    state.counts.offered += 1;
    state.lastActivityMs = nowMs;
    if (e.version !== undefined) {
      const newest = state.newestVersion[e.source];
      if (newest !== undefined && e.version < newest) {
        state.counts.stale += 1;
        state.staleEvents.push(record(e));
        if (state.staleEvents.length > STALE_KEPT) state.staleEvents.shift();
        return { decision: 'stale', coalescerId: this.coalescerId, newestVersion: newest };
      }
      state.newestVersion[e.source] = e.version;
    }
    const { running, pending } = state;
    const { whileRunning } = this.self.policy;
    if (running && whileRunning === 'skip') {
      state.counts.skipped += 1;
      this.owedSkipped.push(record(e));
      return { decision: 'skipped', coalescerId: this.coalescerId, runKey: running.runKey, runState: 'running' };
    }
    if (running && whileRunning === 'steer' && !pending && !running.steerClosed && hasRoom(running, e, this.self.policy.maxEventsPerRun)) {
      this.steer(running, e);
      return this.remember(offer, { decision: 'steered', coalescerId: this.coalescerId, runKey: running.runKey, runState: 'running' });
    }
    if (pending) {
      this.addTo(pending, e, nowMs);
      state.counts.coalesced += 1;
      return this.pendingAnswer(pending, 'coalesced', nowMs);
    }
    if (running && whileRunning === 'cancel' && !running.cancelRequested) {
      // Restart on the newest state: the new batch takes the live run's events too, and the live run
      // learns who supersedes it before its cancellation arrives (signals and cancel are delivered in order).
      running.cancelRequested = true;
      state.pending = this.open(e, nowMs, running);
      this.owedSupersede = { runKey: running.runKey, by: state.pending.runKey };
    } else {
      state.pending = this.open(e, nowMs);
    }
    state.counts.started += 1;
    return this.pendingAnswer(state.pending, 'started', nowMs);
  }

  /**
   * A run has ended (its own signal, or the coalescer saw its result). Its summary is closed; if it
   * was the live run, the coalescer is free to start the pending batch: returns whether it was.
   */
  runEnded({ runKey, terminalReason }: RunEnded, nowMs: number): boolean {
    const { state } = this;
    // The newest with this key: a re-armed event's batch reuses the ID of the run that was deleted.
    const summary = [...state.runs].reverse().find((r) => r.runKey === runKey);
    if (summary && !summary.endedAt) {
      summary.endedAt = new Date(nowMs).toISOString();
      summary.terminalReason = terminalReason;
    }
    if (state.running?.runKey !== runKey) return false;
    state.running = undefined;
    state.lastActivityMs = nowMs;
    return true;
  }

  /** A redelivery of an event still waiting in the pending batch: keep its delivery ids with the event. */
  redelivered(eventKey: string, deliveryIds: string[]): void {
    const e = this.state.pending?.events.find((x) => x.eventKey === eventKey);
    if (e) e.deliveryIds.push(...deliveryIds.filter((d) => !e.deliveryIds.includes(d)));
  }

  /**
   * What to do next at `nowMs`, in order: signals owed to live runs, a due batch (none starts while a
   * run is live), continue-as-new when Temporal suggests it, the idle close, else wait.
   */
  next(nowMs: number, continueAsNewSuggested: boolean): Step {
    const { state } = this;
    const { policy } = this.self;
    if (this.owedSupersede) {
      const owed = this.owedSupersede;
      this.owedSupersede = undefined;
      return { kind: 'supersede', ...owed };
    }
    const steer = this.owedSteer;
    if (steer) {
      this.owedSteer = undefined;
      const live = state.running?.runKey === steer.runKey ? state.running : undefined;
      // One update carries every event steered since the last; its ID is the first event's key (an
      // event is steered at most once, into one run), so a retried delivery is the same update.
      if (live && !live.steerClosed) return { kind: 'steer', runKey: steer.runKey, id: `steer:${steer.events[0]!.eventKey}`, events: steer.events };
      // The run ended or refused a steer before these were sent: they wait for the follow-up run.
      this.followUp(steer.runKey, steer.events, nowMs);
    }
    // One signal carries every skip since the last, at most one a SKIPPED_SIGNAL_EVERY_MS (and all
    // that are owed before a continue-as-new): a storm costs a few history events, not two each.
    // With no live run left to record them on, the skips stay counted and answered.
    let skippedDueMs: number | undefined;
    if (this.owedSkipped.length && state.running) {
      skippedDueMs = this.skippedSignalAtMs + SKIPPED_SIGNAL_EVERY_MS;
      if (nowMs >= skippedDueMs || continueAsNewSuggested) {
        const events = this.owedSkipped;
        this.owedSkipped = [];
        this.skippedSignalAtMs = nowMs;
        return { kind: 'record-skipped', runKey: state.running.runKey, events };
      }
    } else this.owedSkipped = [];
    if (state.pending && !state.running && nowMs >= dueAt(state.pending, policy)) return { kind: 'start', batch: this.start(state.pending, nowMs) };
    if (continueAsNewSuggested) return { kind: 'continue-as-new' };
    this.seen.prune(nowMs);
    // Idle, and every event past its dedup horizon: a redelivery now would be decided afresh anyway.
    const closesAt = Math.max(state.lastActivityMs + policy.idleCloseMs, this.seen.expiresAtMs ?? 0);
    if (this.idle && nowMs >= closesAt) return { kind: 'close' };
    if (state.pending && !state.running) return { kind: 'wait', untilMs: dueAt(state.pending, policy) };
    if (this.idle) return { kind: 'wait', untilMs: closesAt };
    return skippedDueMs === undefined ? { kind: 'wait' } : { kind: 'wait', untilMs: skippedDueMs };
  }

  /**
   * The live run's answer to a `steer` step. Refused events (the run had begun committing, or ended),
   * and any it did not answer for, wait in the follow-up batch as with `buffer_one`; a run that refused
   * once is sent no more, so later events follow them there in the order they arrived.
   */
  steerAnswered(runKey: string, answer: SteerAnswer, events: OfferedEvent[], nowMs: number): void {
    const { state } = this;
    const refused = new Set(answer.refused);
    const accepted = new Set(answer.accepted.filter((k) => !refused.has(k)));
    const back = events.filter((e) => !accepted.has(e.eventKey));
    const summary = [...state.runs].reverse().find((r) => r.runKey === runKey);
    if (summary) summary.events += events.length - back.length;
    if (!back.length) return;
    state.counts.steerRefused = (state.counts.steerRefused ?? 0) + back.length;
    this.followUp(runKey, back, nowMs);
  }

  /** Steered events the live run `runKey` did not take: out of its list, into the follow-up batch. */
  private followUp(runKey: string, events: OfferedEvent[], nowMs: number): void {
    const { state } = this;
    const running = state.running?.runKey === runKey ? state.running : undefined;
    const keys = new Set(events.map((e) => e.eventKey));
    if (running) {
      running.steerClosed = true;
      running.events = running.events.filter((e) => !keys.has(e.eventKey));
      running.chars = undefined;
      running.steered = (running.steered ?? []).filter((k) => !keys.has(k));
    }
    state.lastActivityMs = nowMs;
    for (const e of events) {
      if (state.pending) this.addTo(state.pending, e, nowMs);
      else state.pending = this.open(e, nowMs);
    }
  }

  /** Overlap `steer`: the event is the live run's now (held there, so never taken twice) and owed to it. */
  private steer(running: NonNullable<CoalescerState['running']>, e: OfferedEvent): void {
    this.state.counts.steered = (this.state.counts.steered ?? 0) + 1;
    running.chars = charsOf(running) + eventChars(e);
    running.events.push(e);
    (running.steered ??= []).push(e.eventKey);
    if (this.owedSteer?.runKey === running.runKey) this.owedSteer.events.push(e);
    else this.owedSteer = { runKey: running.runKey, events: [e] };
  }

  /** The pending batch becomes the live run. */
  private start(b: Batch, nowMs: number): Batch {
    const { state } = this;
    state.pending = undefined;
    state.running = { runKey: b.runKey, startedAtMs: nowMs, events: b.events, overflow: b.overflow, chars: charsOf(b) };
    state.counts.runs += 1;
    state.runs.push({ runKey: b.runKey, events: b.events.length + b.overflow, startedAt: new Date(nowMs).toISOString() });
    if (state.runs.length > RECENT_RUNS) state.runs.shift();
    return b;
  }

  /** The answer for an event already held by the pending batch or the live run, if it is. */
  private heldAnswer(e: OfferedEvent): OfferAnswer | undefined {
    const { pending, running } = this.state;
    for (const [batch, runState] of [
      [pending, 'pending'],
      [running, 'running'],
    ] as const) {
      const held = batch?.events.find((x) => x.eventKey === e.eventKey);
      if (!batch || !held) continue;
      const taken = { coalescerId: this.coalescerId, runKey: batch.runKey, runState };
      if (held.fingerprint !== e.fingerprint) return { decision: 'mismatch', ...taken };
      // A redelivery: its delivery ids go with the event, into the run's record.
      for (const id of e.deliveryIds ?? []) if (!held.deliveryIds.includes(id)) held.deliveryIds.push(id);
      if (runState === 'running' && running?.steered?.includes(e.eventKey)) return { decision: 'steered', duplicate: true, ...taken };
      const opened = 'openedBy' in batch ? batch.openedBy === e.eventKey : batch.events[0]?.eventKey === e.eventKey;
      return { decision: opened ? 'started' : 'coalesced', duplicate: true, ...taken };
    }
    return undefined;
  }

  /** The answer for an event decided before (the seen table's entry): the same decision and run, or `mismatch` on other inputs. */
  private seenAnswer(row: SeenEvent, fingerprint: string | undefined): OfferAnswer {
    const [eventKey, , , decision, openedBy] = row;
    const runKey = decision === 'stale' ? undefined : batchRunId(this.self.agent, this.self.wakeKey, openedBy ?? eventKey);
    const base = { coalescerId: this.coalescerId, ...(runKey ? { runKey } : {}) };
    if (fingerprint !== undefined && !SeenTable.sameInputs(row, fingerprint)) return { decision: 'mismatch', ...base };
    return { decision, duplicate: true, ...base };
  }

  /** The opening event key of a run of this coalescer, from its run key. */
  private openerOf(runKey: string): string {
    return runKey.slice(batchRunId(this.self.agent, this.self.wakeKey, '').length);
  }

  private remember(offer: Offer, answer: OfferAnswer): OfferAnswer {
    if (!offer.offerId) return answer;
    const { recent } = this.state;
    recent.push({ eventKey: offer.event.eventKey, offerId: offer.offerId, answer });
    if (recent.length > RECENT_ANSWERS) recent.splice(0, recent.length - RECENT_ANSWERS);
    return answer;
  }

  private addTo(batch: Batch, e: OfferedEvent, nowMs: number): void {
    batch.lastAtMs = nowMs;
    fitInto(batch, e, this.self.policy.maxEventsPerRun);
  }

  private open(e: OfferedEvent, nowMs: number, carried?: { runKey: string; events: OfferedEvent[]; overflow: number }): Batch {
    const { agent, wakeKey, policy } = this.self;
    const carriedEvents = carried?.events ?? [];
    const batch: Batch = {
      runKey: batchRunId(agent, wakeKey, e.eventKey),
      openedBy: e.eventKey,
      openedAtMs: nowMs,
      lastAtMs: nowMs,
      events: [...carriedEvents],
      overflow: carried?.overflow ?? 0,
      ...(carried ? { supersedes: carried.runKey } : {}),
    };
    fitInto(batch, e, policy.maxEventsPerRun);
    return batch;
  }

  private pendingAnswer(b: Batch, decision: 'started' | 'coalesced', nowMs: number): OfferAnswer {
    return {
      decision,
      coalescerId: this.coalescerId,
      runKey: b.runKey,
      runState: 'pending',
      startsInMs: this.state.running ? 0 : Math.max(0, dueAt(b, this.self.policy) - nowMs),
    };
  }
}
