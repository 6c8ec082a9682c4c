import { charsOf, whole, type OfferedEvent } from '../../src/core/coalesce-batch';
import type { Batch, CoalescerState, Offer, OfferAnswer, RunTook } from '../../src/core/coalesce-types';
import type { Adopt } from '../../src/core/messages';
import { batchRunKey, batchRunToken } from '../../src/core/ids';
import { CoalescerAnswers } from './answers';

/** Live runs of terminated chains a chain remembers while it has its own (their ends may name steered events). */
const FOREIGN_RUNS = 10;
/** Runs re-armed by a person a chain remembers, to leave out of a table adopted later (it comes within a recovery round). */
const FORGOTTEN_RUNS = 20;

type Run = NonNullable<CoalescerState['running']>;

/**
 * What the coalescer machine (machine.ts) does after a person's hand: forget a re-armed run's
 * events, re-key a batch whose run ID was taken (a coalescer reset by hand), take in the dedup table
 * a chain terminated by hand left. Pure, over the machine's state.
 */
export abstract class CoalescerByHand extends CoalescerAnswers {
  /**
   * Forget the events a closed run took (a person re-armed it), so their next deliveries are decided
   * afresh. Not the live run's, a foreign run's whose end is not taken yet (it may name steered events
   * its model saw), or the pending batch's: returns the event keys forgotten.
   */
  forgetRun(runKey: string): string[] {
    const { pending, running, foreign } = this.state;
    if (pending?.runKey === runKey || running?.runKey === runKey || foreign?.some((f) => f.runKey === runKey)) return [];
    const token = this.tokenOf(runKey);
    const keys = this.seen.keysOfRun(token);
    for (const key of keys) this.seen.forget(key);
    this.state.recent = this.state.recent.filter((r) => !keys.includes(r.eventKey));
    // The run may be of a chain terminated by hand whose table a recovery has not brought yet (the run
    // is deleted once this returns): its rows are left out of that table when it comes (`adopt`).
    this.state.forgottenRuns = [...(this.state.forgottenRuns ?? []).filter((t) => t !== token), token].slice(-FORGOTTEN_RUNS);
    return keys;
  }

  /**
   * The live run's ID was taken at its start (only a coalescer reset by hand can meet one): the batch
   * gets the chain's next number, and its events' entries name it. Returns the batch to start again,
   * with `started`'s events (the live run's are whole only until a continue-as-new).
   */
  rekey(started: Batch): Batch | undefined {
    const { state } = this;
    const { runKey } = started;
    const running = state.running;
    if (running?.runKey !== runKey) return undefined;
    const opener = this.tokenOf(runKey).replace(/~[^~]*$/, '');
    const n = (state.batches = (state.batches ?? 0) + 1);
    const next = batchRunKey(this.self.agent, this.self.wakeKey, batchRunToken(opener, state.chain ?? '0', n));
    running.runKey = next;
    const summary = state.runs.find((r) => r.runKey === runKey);
    if (summary) summary.runKey = next;
    for (const e of running.events) this.seen.retake(e.eventKey, this.tokenOf(next));
    return {
      runKey: next,
      openedBy: opener,
      openedAtMs: running.startedAtMs,
      lastAtMs: running.startedAtMs,
      events: started.events,
      overflow: started.overflow,
    };
  }

  /**
   * The live run's ID was taken at its start, by the run a discarded branch of this coalescer started
   * (a reset by hand rewinds the coalescer, and the offers after the reset point are decided again),
   * which took the events `took` (activity `runTook`; null: it is gone, deleted by hand meanwhile).
   * The batch's events that run took are its own: it is the live run, holding them, looked at through
   * Temporal, and never run again under a new ID (their effects keyed by it are done, or being done,
   * there); those steered into it are held as steered, so its end sends the ones its model never saw
   * to a follow-up run. The others wait in a batch of the chain's next number for its end. A run that
   * took none of them is passed over (`rekey`). Returns the batch to start now, if any.
   */
  metTaken(started: Batch, took: RunTook | null, nowMs: number): Batch | undefined {
    const running = this.state.running;
    if (running?.runKey !== started.runKey) return undefined;
    const theirs = new Set(took?.took ?? []);
    if (!running.events.some((e) => theirs.has(e.eventKey))) return this.rekey(started);
    const steeredIn = (took?.steered ?? []).filter((k) => running.events.some((e) => e.eventKey === k) && !running.steered?.includes(k));
    if (steeredIn.length) running.steered = [...(running.steered ?? []), ...steeredIn];
    // Offers decided while the start and this read were awaited saw the batch as the live run: one
    // steered into it is owed to that run (it takes it, or its refusal or end sends it to the
    // follow-up batch), so it stays there alone.
    const steered = new Set(running.steered ?? []);
    const stays = (e: { eventKey: string }) => theirs.has(e.eventKey) || steered.has(e.eventKey);
    const mine = running.events.filter(stays);
    const rest = started.events.filter((e) => !stays(e));
    running.events = mine;
    running.overflow = 0;
    running.chars = charsOf({ events: mine });
    const summary = this.state.runs.find((r) => r.runKey === running.runKey);
    if (summary) summary.events = mine.length;
    if (!rest.length) return undefined;
    // One opened a batch (`buffer_one`), or a restart that carries the batch's events (`cancel`): its
    // answer named it, so the others join it rather than a new one taking its place.
    const { pending } = this.state;
    const batch = pending ?? this.open(rest[0]!, nowMs);
    for (const e of rest) if (!batch.events.some((x) => x.eventKey === e.eventKey)) this.addTo(batch, e, nowMs);
    if (!pending) batch.overflow = started.overflow;
    else if (pending.supersedes !== running.runKey) pending.overflow += started.overflow;
    this.state.pending = batch;
    const moved = new Set(rest.map((e) => e.eventKey));
    // A redelivery's answer kept whole named the batch's run: a retry of it is answered afresh.
    this.state.recent = this.state.recent.filter((r) => !moved.has(r.eventKey));
    for (const e of rest) this.seen.retake(e.eventKey, this.tokenOf(batch.runKey));
    return undefined;
  }

  /**
   * A chain terminated by hand left its dedup table: taken in before this chain's own (seen.ts
   * `adopt`), but for the rows of runs re-armed here meanwhile (`forgetRun`). And its live run, when it was still open: held as this chain's live run unless this
   * chain started one of its own meanwhile, so the batch waiting here starts after it ends (its end
   * comes by its own signal, or the watch finds it); its steered events its model never saw then go
   * to the follow-up batch as any live run's do. The foreign runs that chain held go the same way.
   */
  adopt(left: Adopt): number {
    for (const [source, v] of Object.entries(left.newestVersion ?? {})) this.state.newestVersion[source] = Math.max(this.state.newestVersion[source] ?? v, v);
    let adopted = this.seen.adopt(left.seen, left.seenOpeners, left.except, left.chain);
    // Rows of a run a person re-armed here before this table came: that run is gone, its events decided afresh.
    for (const token of this.state.forgottenRuns ?? []) for (const key of this.seen.keysOfRun(token)) adopted -= Number(this.seen.forget(key));
    // Its live run, then the foreign runs it held itself (of chains terminated before it): each still
    // open, its end would reach no chain.
    for (const run of [left.live, ...(left.foreign ?? [])]) if (run) this.adoptRun(run);
    return adopted;
  }

  /** Whether this chain holds `runKey` as its live or a foreign run (after an adoption: it asks that run to report its end). */
  holdsRun(runKey: string): boolean {
    return this.state.running?.runKey === runKey || this.state.foreign?.some((f) => f.runKey === runKey) === true;
  }

  /** A live run of a terminated chain: this chain's live run, or a foreign one when it has its own. */
  private adoptRun(live: Run): void {
    if (this.state.pending?.runKey === live.runKey || this.holdsRun(live.runKey)) return;
    // Its restart events, if a batch there held them, come again as offers that say so (`restartOf`).
    const { lookedAtMs: _l, cancelRequested: _c, restartKeys: _r, ...taken } = live;
    // Events this chain decided itself before the table came (a redelivery after the terminate, with
    // its run here) are answered from here, never from the adopted run, nor taken into its restart
    // under `cancel`: that run holds them still, but they are not its to hand on.
    const token = this.tokenOf(live.runKey);
    const run = { ...taken, events: live.events.filter((e) => (this.seen.get(e.eventKey)?.runToken ?? token) === token) };
    // This chain started a run of its own meanwhile: the adopted one is remembered until it ends.
    if (!this.state.running) this.state.running = run;
    else this.state.foreign = [...(this.state.foreign ?? []), run].slice(-FOREIGN_RUNS);
  }

  /**
   * A run of an earlier chain (terminated by hand) names steered events its model never saw: those
   * undecided here, or held by a row adopted from that chain as steered into this very run, go to
   * the follow-up batch.
   */
  protected orphaned(runKey: string, told: OfferedEvent[], nowMs: number, seen?: string[], ranItsEvents = false): boolean {
    const token = this.tokenOf(runKey);
    // A live run adopted while this chain had its own: the steered events it held that its model was not given.
    const foreign = this.state.foreign?.find((f) => f.runKey === runKey);
    if (foreign) this.state.foreign = this.state.foreign!.filter((f) => f !== foreign);
    if (foreign && ranItsEvents) this.restartDone(foreign);
    const given = new Set(seen ?? []);
    // Steered events cross a continue-as-new whole (carry.ts `carriedRuns`).
    const held = (foreign?.events ?? []).filter(whole).filter((e) => foreign!.steered?.includes(e.eventKey) && !given.has(e.eventKey));
    const events = [...told, ...held.filter((e) => !told.some((t) => t.eventKey === e.eventKey))];
    const orphans = events.filter((e) => {
      const row = this.seen.get(e.eventKey);
      return !row || (row.decision === 'steered' && row.runToken === token);
    });
    if (!orphans.length) return false;
    this.followUp(runKey, orphans, nowMs);
    // Its entry names the batch that holds it now: the follow-up, or the live run that held it already
    // (decided afresh here, or that run of a chain terminated by hand adopted as live).
    const { pending, running } = this.state;
    for (const e of orphans) {
      const holder = [pending, running].find((b) => b?.events.some((x) => x.eventKey === e.eventKey));
      if (holder) this.seen.add(e.eventKey, e.fingerprint, nowMs, 'steered', this.tokenOf(holder.runKey));
    }
    return true;
  }

  /**
   * The live or foreign run whose restart `offer` is (a recovery's, `Offer.restarts`), when that run
   * holds the event and no batch here does yet: then the event is not answered as that run's.
   */
  protected restartOf(offer: Offer): Run | undefined {
    const { restarts } = offer;
    const key = offer.event.eventKey;
    if (!restarts || this.state.pending?.events.some((e) => e.eventKey === key)) return undefined;
    const run = [this.state.running, ...(this.state.foreign ?? [])].find((r) => r?.runKey === restarts);
    return run?.events.some((e) => e.eventKey === key) ? run : undefined;
  }

  /**
   * A run whose restart events the pending batch holds (`restartHeld`) had run them (its end says it
   * began committing, or ended otherwise than cancelled): they leave the batch, their entries name the
   * run, and a batch left empty is gone.
   */
  protected restartDone(run: Run): void {
    const keys = new Set(run.restartKeys ?? []);
    const { pending } = this.state;
    if (!keys.size || !pending) return;
    pending.events = pending.events.filter((e) => !keys.has(e.eventKey));
    pending.chars = undefined;
    for (const key of keys) this.seen.retake(key, this.tokenOf(run.runKey));
    if (!pending.events.length && !pending.overflow) this.state.pending = undefined;
  }

  /**
   * An event a recovery offers again as the restart of `run` (the live run of a chain terminated by
   * hand, whose restart batch held it; this chain's live run or a foreign one): it is answered from
   * the pending batch it joins or opens, which starts after that run's end, and leaves that batch if
   * the run had run it (`restartDone`). Not `stale`: it was taken before the newer versions.
   */
  protected restartHeld(e: OfferedEvent, run: Run, nowMs: number): OfferAnswer {
    const { state } = this;
    state.counts.offered += 1;
    state.lastActivityMs = nowMs;
    run.restartKeys = [...(run.restartKeys ?? []), e.eventKey];
    if (run === state.running) run.cancelRequested = true; // it is being cancelled already: no second restart of it
    if (state.pending) {
      this.addTo(state.pending, e, nowMs);
      state.counts.coalesced += 1;
      return this.pendingAnswer(state.pending, 'coalesced', nowMs);
    }
    state.pending = this.open(e, nowMs);
    state.counts.started += 1;
    return this.pendingAnswer(state.pending, 'started', nowMs);
  }

  /** Put events in the follow-up batch of run `runKey` (steering.ts). */
  protected abstract followUp(runKey: string, events: OfferedEvent[], nowMs: number): void;
  /** Add an event to a batch (machine.ts). */
  protected abstract addTo(batch: Batch, e: OfferedEvent, nowMs: number): void;

  /** Open a batch with an event (machine.ts). */
  protected abstract open(e: OfferedEvent, nowMs: number, carried?: { runKey: string; events: OfferedEvent[]; overflow: number }): Batch;
}
