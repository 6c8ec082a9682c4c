import { charsOf, dueAt, fitInto, hasRoom, openBatch, ranItsEvents, whole, type CoalescerIdentity, type OfferedEvent } from '../../src/core/coalesce-batch';
import type { Batch, CoalescerState, Offer, OfferAnswer, RunEnded } from '../../src/core/coalesce-types';
import { initialState, record, runInputOf, SKIPPED_SIGNAL_EVERY_MS, type NextAction } from './batch';
import { SeenTable } from './seen';
import { SKIPPED_PAYLOAD_CHARS, SKIPPED_SIGNAL_PAYLOAD_CHARS, SkipLedger, skippedRecord } from './skips';
import { CoalescerSteering } from './steering';

export { BATCH_BUDGET_CHARS } from '../../src/core/coalesce-batch';
export { SKIPPED_SIGNAL_EVERY_MS } from './batch';
export { dueAt, initialState, runInputOf, type CoalescerIdentity, type NextAction };

const RECENT_RUNS = 10;
const STALE_KEPT = 20;

/**
 * The coalescer's decisions, with no Temporal in them: deterministic, driven by the workflow shell
 * (workflow.ts) and by unit tests alike. Its `state` is the plain JSON the workflow carries across
 * continue-as-new and answers queries with; the signals it owes live runs are not part of it (the
 * shell hands them out before it continues as new).
 */
export class CoalescerMachine extends CoalescerSteering {
  private owedSupersede?: { runKey: string; by: string };
  /** Skips whose run has not taken their record yet (their answers wait for it). */
  readonly skips = new SkipLedger(SKIPPED_SIGNAL_EVERY_MS);
  /** The dedup of events by key, over `state.seen`. */
  readonly seen: SeenTable;

  constructor(self: CoalescerIdentity, state: CoalescerState) {
    super(self, state);
    this.seen = new SeenTable(state, self.policy.dedupHorizonMs, (floorMs, dropped) => {
      state.seenFloorMs = Math.max(state.seenFloorMs ?? 0, floorMs);
      state.counts.forgottenEarly = (state.counts.forgottenEarly ?? 0) + dropped;
    });
  }

  /**
   * What the `event` query tells of an event: its look-up, except that a skip not standing yet (its
   * live run has not taken the record) names no run, so a caller following a moved event does not
   * follow it to a run that may refuse it.
   */
  known(
    eventKey: string,
  ): ReturnType<CoalescerMachine['lookup']> | (Omit<NonNullable<ReturnType<CoalescerMachine['lookup']>>, 'runKey' | 'runState'> & { unconfirmed: true }) {
    const found = this.lookup(eventKey);
    if (found?.decision !== 'skipped' || !this.skips.open(eventKey)) return found;
    const { runKey: _runKey, runState: _runState, ...rest } = found;
    return { ...rest, unconfirmed: true };
  }

  /**
   * Neither a pending batch nor a live run, nor a foreign run: its end, by its signal or the watch, may
   * name steered events its model never saw, and would reach no chain once this one closed.
   */
  get idle(): boolean {
    return !this.state.pending && !this.state.running && !this.state.foreign?.length;
  }

  /**
   * The decision for one offered event, in the order offers arrive (each sees the state the previous
   * one left):
   * - a retried offer (same event, same offer id: another update, or the fallback signal) gets its earlier answer again;
   * - an event already in the pending batch or the live run is never taken twice: `started` or
   *   `coalesced` as it was, or `mismatch` if this offer's inputs (fingerprint) differ from the held event's;
   *   but one a recovery offers again as the restart of the run that holds it waits in the pending batch
   *   for that run's end (`restartHeld`);
   * - an event the seen table holds (decided within the dedup horizon) gets that decision again, or `mismatch` on other inputs;
   * - a version older than the newest seen from the event's source is `stale`;
   * - with a live run: `skip` records the event on it (`skipped`), but for one a recovery offers again
   *   as accepted (`Offer.accepted`), which waits for the next batch; `buffer_one` gathers one follow-up
   *   batch; `cancel` opens a batch that takes the live run's events too and supersedes that run;
   *   `steer` sends it into the live run (`steered`) unless that run has refused a steer, is full, or a
   *   follow-up batch is already open: then it joins the follow-up batch, as `buffer_one`;
   * - otherwise the event joins the pending batch (`coalesced`) or opens one (`started`).
   */
  offer(offer: Offer, nowMs: number): OfferAnswer {
    const e = offer.event;
    const retried = this.recentAnswer(offer);
    if (retried) return retried;
    const decided = this.seen.get(e.eventKey);
    // The very offer decided before (another update, or the fallback signal), past the recent answers:
    // its first decision and run, for as long as the dedup table holds the event.
    if (decided && offer.offerId && SeenTable.firstOffer(decided, offer.offerId) && SeenTable.sameInputs(decided, e.fingerprint))
      return this.firstAnswer(decided, offer.offerId, nowMs);
    const restarted = this.restartOf(offer);
    const held = restarted ? undefined : this.heldAnswer(e);
    if (held) return this.remember(offer, held);
    if (decided && !restarted) return this.remember(offer, this.seenAnswer(decided, e.fingerprint));
    const answer = restarted ? this.restartHeld(e, restarted, nowMs) : this.decide(offer, nowMs);
    this.seen.add(e.eventKey, e.fingerprint, nowMs, answer.decision, answer.runKey && this.tokenOf(answer.runKey), offer.offerId);
    return this.remember(offer, answer);
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
    // An event a chain terminated by hand had accepted, offered again by the recovery: its caller was
    // told it runs, so it is not skipped on a run of the new chain; it opens or joins the next batch.
    if (running && whileRunning === 'skip' && !offer.accepted) {
      state.counts.skipped += 1;
      this.skips.add(running.runKey, e, offer.offerId);
      return { decision: 'skipped', coalescerId: this.coalescerId, runKey: running.runKey, runState: 'running' };
    }
    if (running && whileRunning === 'steer' && !pending && !running.steerClosed && hasRoom(running, e, this.self.policy.maxEventsPerRun)) {
      this.steer(running, e);
      return { decision: 'steered', coalescerId: this.coalescerId, runKey: running.runKey, runState: 'running' };
    }
    if (pending) {
      this.addTo(pending, e, nowMs);
      state.counts.coalesced += 1;
      return this.pendingAnswer(pending, 'coalesced', nowMs);
    }
    // A live run whose events crossed a continue-as-new by their keys alone (one adopted from a chain
    // terminated by hand) cannot be restarted: the event waits for its end, as with `buffer_one`.
    if (running && whileRunning === 'cancel' && !running.cancelRequested && running.events.every(whole)) {
      // Restart on the newest state: the new batch takes the live run's events too, and the live run
      // learns who supersedes it before its cancellation arrives (signals and cancel are delivered in order).
      running.cancelRequested = true;
      state.pending = this.open(e, nowMs, { ...running, events: running.events.filter(whole) });
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
  runEnded({ runKey, terminalReason, seen, commitBegan, unseenEvents }: RunEnded, nowMs: number): boolean {
    const { state } = this;
    const summary = state.runs.find((r) => r.runKey === runKey);
    if (summary && !summary.endedAt) {
      summary.endedAt = new Date(nowMs).toISOString();
      summary.terminalReason = terminalReason;
    }
    const running = state.running;
    if (running?.runKey !== runKey) return this.orphaned(runKey, unseenEvents ?? [], nowMs, seen, ranItsEvents({ commitBegan, seen, terminalReason }));
    // Overlap `steer`: an event steered into the run that its model was never given (it ended first,
    // or committed on an answer given before the event) is the follow-up run's, as a refused one is.
    // Steered events cross a continue-as-new whole (carry.ts `carriedRuns`): their follow-up run takes them.
    const given = new Set(seen ?? []);
    const unseen = running.events.filter(whole).filter((e) => running.steered?.includes(e.eventKey) && !given.has(e.eventKey));
    if (unseen.length) {
      state.counts.steerRefused = (state.counts.steerRefused ?? 0) + unseen.length;
      this.followUp(runKey, unseen, nowMs);
    }
    // Overlap `cancel`: a run that says it ended otherwise than cancelled (it had begun committing and
    // refused its supersede, or ended before the supersede reached it) is done with what it carried:
    // the restart batch keeps only the events that came after. An end known only from Temporal
    // (terminated, deleted: no `seen`) keeps them: the restart runs them.
    const restart = state.pending;
    const finished = ranItsEvents({ commitBegan, seen, terminalReason });
    if (finished) this.restartDone(running);
    if (restart?.supersedes === runKey && finished) {
      const done = new Set(running.events.map((e) => e.eventKey));
      restart.events = restart.events.filter((e) => !done.has(e.eventKey));
      restart.overflow = Math.max(0, restart.overflow - running.overflow);
      restart.chars = undefined;
      delete restart.supersedes;
    }
    if (this.owedSteer?.runKey === runKey) this.owedSteer = undefined; // among the unseen, now the follow-up's
    state.running = undefined;
    state.lastActivityMs = nowMs;
    return true;
  }

  /**
   * The record of skips sent to `runKey` was delivered (they stand) or refused: that run had closed,
   * though its end may not have reached the coalescer (terminated by hand). The skips it refused are
   * decided again as events that came after its end: they join the pending batch or open one, which
   * starts once the run's end is known (the shell looks at it at once). Their seen entries and
   * remembered answers follow, so the waiting offers are answered from the batch that takes them.
   */
  skipsRecorded(runKey: string, delivered: boolean, nowMs: number): void {
    const back = this.skips.recorded(runKey, delivered);
    if (!back.length) return;
    const { state } = this;
    const keys = new Set(back.map((k) => k.event.eventKey));
    state.recent = state.recent.filter((r) => !keys.has(r.eventKey));
    for (const { event: e, offerId } of back) {
      const row = this.seen.get(e.eventKey);
      // Decided again since (a rearm of that run forgot it, and it came back): that decision holds.
      if (row && !(row.decision === 'skipped' && row.runToken === this.tokenOf(runKey))) continue;
      state.counts.skipped -= 1;
      if (state.pending) {
        this.addTo(state.pending, e, nowMs);
        state.counts.coalesced += 1;
      } else {
        state.pending = this.open(e, nowMs);
        state.counts.started += 1;
      }
      const [token, as] = [this.tokenOf(state.pending.runKey), state.pending.openedBy === e.eventKey ? 'started' : 'coalesced'] as const;
      // Its entry names the batch now (a rearm of the closed run may have forgotten it meanwhile).
      if (row) this.seen.retake(e.eventKey, token, as);
      // Its row a rearm forgot comes back with its offer's id: the waiting offer is answered as itself, not as a redelivery.
      else this.seen.add(e.eventKey, e.fingerprint, nowMs, as, token, offerId);
    }
    state.lastActivityMs = nowMs;
  }

  /**
   * What to do next at `nowMs`, in order: signals owed to live runs, a due batch (none starts while a
   * run is live), continue-as-new when Temporal suggests it, the idle close, else wait.
   */
  next(nowMs: number, continueAsNewSuggested: boolean): NextAction {
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
    // The record of the skips since the last: a skip stands once its run has taken it (skips.ts).
    const skips = this.skips.next(nowMs, continueAsNewSuggested);
    if (skips && 'events' in skips) {
      const live = state.running?.runKey === skips.runKey ? state.running : undefined;
      const { events, chars } = skippedRecord(skips.events, Math.min(SKIPPED_SIGNAL_PAYLOAD_CHARS, SKIPPED_PAYLOAD_CHARS - (live?.skippedChars ?? 0)));
      if (live) live.skippedChars = (live.skippedChars ?? 0) + chars;
      return { kind: 'record-skipped', runKey: skips.runKey, events };
    }
    // A foreign run whose restart events the pending batch holds: the batch waits for its end too.
    const waits = state.running !== undefined || state.foreign?.some((f) => f.restartKeys?.length) === true;
    if (state.pending && !waits && nowMs >= dueAt(state.pending, policy)) return { kind: 'start', batch: this.start(state.pending, nowMs) };
    if (continueAsNewSuggested && this.skips.settled) return { kind: 'continue-as-new' };
    this.seen.prune(nowMs);
    // Idle, and every event past its dedup horizon: a redelivery now would be decided afresh anyway.
    const closesAt = Math.max(state.lastActivityMs + policy.idleCloseMs, this.seen.expiresAtMs ?? 0);
    if (this.idle && this.skips.settled && nowMs >= closesAt) return { kind: 'close' };
    const due = [skips?.dueMs, state.pending && !waits ? dueAt(state.pending, policy) : undefined, this.idle ? closesAt : undefined];
    const untilMs = Math.min(...due.map((d) => d ?? Infinity));
    return untilMs === Infinity ? { kind: 'wait' } : { kind: 'wait', untilMs };
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

  protected addTo(batch: Batch, e: OfferedEvent, nowMs: number): void {
    batch.lastAtMs = nowMs;
    fitInto(batch, e, this.self.policy.maxEventsPerRun);
  }

  /** A new batch, the chain's next (src/core/coalesce-batch.ts `openBatch`, as the gate's first decision opens it). */
  protected open(e: OfferedEvent, nowMs: number, carried?: { runKey: string; events: OfferedEvent[]; overflow: number }): Batch {
    const n = (this.state.batches = (this.state.batches ?? 0) + 1);
    return openBatch(this.self, e, nowMs, this.state.chain ?? '0', n, carried);
  }
}
