import type { CoalescePolicy } from './policy';
import type { Decision } from './decision';
import type { AbsorbedEvent, TerminalReason } from './run-types';

/** Plain-JSON types of the coalescing path: the gate, the coalescer and the run share them. */

/** One event offered to a coalescer: the event as the gate keyed it, with its payload. */
export interface Offer {
  /**
   * The event as keyed, with its payload; with tracing on, `traceparent` names the gate's span for
   * this wake (W3C), so that the run the event opens joins its trace (src/core/trace-context.ts).
   */
  event: AbsorbedEvent & { payload: Record<string, unknown>; fingerprint: string; bucketStart: string; traceparent?: string };
  /**
   * Names this one offer (the gate makes one per delivery it asks about): a retry of the same offer,
   * in another update or by the fallback signal, gets the answer the first one got.
   */
  offerId?: string;
  /**
   * Offered again by a recovery (activities/coalescer/recover.ts) as the restart of this run: the live
   * run of a chain terminated by hand whose restart batch held the event. Decided as an event that
   * comes after that run's end, though the run holds it (workflows/coalescer/machine.ts `restartHeld`).
   */
  restarts?: string;
  /**
   * Offered again by a recovery: an event the chain terminated by hand had accepted (its pending batch,
   * or the batch of a run whose start the termination cut off), whose caller was told it runs. Never
   * skipped: with a live run under `skip`, it waits for the next batch, as under `buffer_one`.
   */
  accepted?: true;
}

/**
 * What the coalescer decided for one offered event.
 * - `started`: the event opened a new batch; its run starts once the debounce allows (`startsInMs`).
 * - `coalesced`: absorbed into a run that has not started yet (`runState: 'pending'`): one debouncing,
 *   or the follow-up of a live run (`buffer_one`), or the restart of a cancelled one (`cancel`).
 * - `skipped`: a run for the wake key is live and the policy is `skip`; recorded on that run, nothing runs.
 * - `steered`: a run for the wake key is live and the policy is `steer`: the event is delivered into
 *   that run (`runState: 'running'`), whose model sees it before its next turn. Should the run have
 *   begun committing by the time it arrives, the run refuses it and it waits for the follow-up run
 *   instead (the run's result and the coalescer's pending batch say which took it).
 * - `stale`: the event's version is older than the newest the coalescer has seen from its source; recorded, nothing runs.
 * - `mismatch`: the pending batch or the live run (`runKey`) already holds an event with this key but
 *   other inputs (fingerprint); nothing is taken.
 */
export type OfferDecision = Extract<Decision, 'started' | 'coalesced' | 'skipped' | 'steered' | 'stale' | 'mismatch'>;

export interface OfferAnswer {
  decision: OfferDecision;
  /**
   * The coalescer had already decided this event (same key, same inputs) for an earlier offer: the
   * decision and run are that earlier one's. The gate then answers as for a redelivery.
   */
  duplicate?: boolean;
  coalescerId: string;
  /** The run that took the event (for `skipped`: the live run it was recorded on; for `steered`: the live run it was sent into; for `mismatch`: the run holding the other event). Absent for `stale`. */
  runKey?: string;
  runState?: 'pending' | 'running';
  /** For a pending run: ms until it may start (debounce), 0 when it waits only for a live run to end. */
  startsInMs?: number;
  /** For `stale`: the newest version seen from this source. */
  newestVersion?: number;
  /** Events this coalescer's dedup table let go before their horizon (its size bound), when any: counted in `/metrics`. */
  forgottenEarly?: number;
}

/** What the coalescer knows about one of its runs. */
export interface CoalescedRun {
  runKey: string;
  events: number;
  startedAt: string;
  endedAt?: string;
  terminalReason?: TerminalReason;
}

/** A batch of events about one wake key that will become one run. */
export interface Batch {
  runKey: string;
  /** Event key of the event that opened the batch (the run's ID is built from it). */
  openedBy: string;
  openedAtMs: number;
  lastAtMs: number;
  events: Offer['event'][];
  overflow: number;
  /** JSON bytes (UTF-8) of `events` (the coalescer's budget per batch; computed again when absent). */
  chars?: number;
  supersedes?: string;
}

/**
 * A first decision's answer, beside its seen entry: the offer's slot (a UUID offer id's first 8
 * characters, as the entry keeps them; for any other id `#` and 8 hex characters of its whole id's
 * hash), then `|`, the decision's code (the entry's may have changed since: then the entry
 * answers), and the answer's `runState` and `startsInMs` when it had them
 * (workflows/coalescer/answers.ts `firstAnswerOf`). About 17 JSON characters.
 */
export type FirstAnswer = string;

/**
 * A live run's event as the coalescer's state holds it after a continue-as-new where nothing after
 * the run's start needs the rest (workflows/coalescer/carry.ts `carriedRuns`): its key, its inputs'
 * fingerprint and its delivery ids, what answers a redelivery of it as the run's and ends the run.
 */
export type KeptEvent = Pick<Offer['event'], 'eventKey' | 'fingerprint' | 'deliveryIds'>;

/** The events a run under a taken ID took, by key (activity `runTook`): `steered`, those steered into it while it ran. */
export interface RunTook {
  took: string[];
  steered: string[];
}

/** The coalescer's whole state: plain JSON, carried across continue-as-new. */
export interface CoalescerState {
  pending?: Batch;
  running?: {
    runKey: string;
    startedAtMs: number;
    /** Whole as the batch held them, or kept without payload past a continue-as-new (src/core/coalesce-batch.ts `whole` tells). */
    events: (Offer['event'] | KeptEvent)[];
    overflow: number;
    /** JSON bytes of its list of events, as on a batch. */
    chars?: number;
    cancelRequested?: boolean;
    /**
     * Keys of its events a recovery offered again as its restart (its chain was terminated by hand while
     * a restart batch superseded it): they wait in the pending batch for its end, and leave it if the
     * run had run them (workflows/coalescer/machine.ts `restartHeld`).
     */
    restartKeys?: string[];
    /** Overlap `steer`: keys of the events steered into it while live (in `events` too, unless it refused them). */
    steered?: string[];
    /** Overlap `steer`: it refused steered events (it had begun committing), so later ones wait for the follow-up run. */
    steerClosed?: boolean;
    /** When the coalescer last looked at it through Temporal (workflows/coalescer/watch.ts): the watch's clock, across continue-as-new. */
    lookedAtMs?: number;
    /** JSON characters of payloads its skip records carried so far (workflows/coalescer/skips.ts `SKIPPED_PAYLOAD_CHARS`). */
    skippedChars?: number;
  };
  /**
   * Names this coalescer's chain of executions (continue-as-new keeps it; a coalescer started after
   * a close has a new one): with `batches`, it makes every run key unique for good, so a batch never
   * meets the ID of a run an earlier chain started (src/core/ids.ts `batchRunKey`).
   */
  chain?: string;
  /** Batches opened in this chain. */
  batches?: number;
  /** Live runs of chains terminated by hand, adopted while this chain had a live run of its own: their ends may name steered events (workflows/coalescer/by-hand.ts). */
  foreign?: NonNullable<CoalescerState['running']>[];
  /** Run tokens of the runs a person re-armed here (`forget`), newest last: left out of a table adopted later (workflows/coalescer/by-hand.ts). */
  forgottenRuns?: string[];
  /** Newest entity version seen, per source (version spaces of different sources are not comparable). */
  newestVersion: Record<string, number>;
  /**
   * Answers to the most recent offers, so a retried offer that crosses a continue-as-new gets the same
   * answer: those the seen table cannot give again (a redelivery's, a mismatch's, a stale one's). A
   * first decision's is in `firstAnswers`.
   */
  recent: { eventKey: string; offerId?: string; answer: Omit<OfferAnswer, 'coalescerId'> & { coalescerId?: string } }[];
  /**
   * The most recent first decisions' answers, as what they said beyond their seen entry (which holds
   * the decision, the run and the offer's id): a retry of the offer gets that very answer, unless
   * another offer's first answer shared its slot (then `<slot>|?`: where its run stands now).
   */
  firstAnswers?: FirstAnswer[];
  /**
   * Every event decided within the dedup horizon, oldest first: the coalescer's dedup of events by
   * key (workflows/coalescer/seen.ts). Carried across continue-as-new; bounded by age and by size.
   */
  seen: SeenRow[];
  /** The opening event keys of the runs compact entries of `seen` name (by `chain.n`). */
  seenOpeners?: Record<string, string>;
  /** Set when the size bound dropped entries younger than the horizon: events decided before it are no longer deduplicated. */
  seenFloorMs?: number;
  lastActivityMs: number;
  counts: {
    offered: number;
    started: number;
    coalesced: number;
    skipped: number;
    stale: number;
    runs: number;
    steered?: number;
    steerRefused?: number;
    /** Events the dedup table let go before their horizon (its size bound): a redelivery of one runs again. */
    forgottenEarly?: number;
  };
  runs: CoalescedRun[];
  staleEvents: AbsorbedEvent[];
}

/** The coalescer's input (and its continue-as-new argument). */
export interface CoalescerInput {
  agent: string;
  wakeKey: string;
  policy: CoalescePolicy;
  state?: CoalescerState;
  /**
   * The offer a new chain was started with (the gate's start of a coalescer for a key with none
   * open): decided before any message, so the gate answered it from the start alone ({@link decideFirst}).
   */
  first?: Offer;
}

/** What the `coalescer` query answers: its policy, its state, and what it is waiting for. */
export interface CoalescerStatus extends CoalescerInput {
  /** Its state, with only the newest entries of `seen` (as many as asked for). */
  state: CoalescerState;
  /** How many events its dedup table holds. */
  seenCount: number;
  /** How many it holds within its horizon before the oldest leave early (for event keys up to 100 characters). */
  seenCapacity: number;
  coalescerId: string;
  historyLength: number;
  /**
   * Offers answered `skipped` whose record the live run has not taken yet (the answer still waits):
   * a skip stands only once it has. A coalescer terminated in that window leaves them to be offered
   * again under their own offer ids (activities/coalescer/recover.ts), not adopted as skipped.
   */
  openSkips: { event: Offer['event']; offerId?: string }[];
}

/**
 * A run has ended: its own signal, its result, or the coalescer's watch of it (a run terminated by
 * hand sends nothing).
 */
export interface RunEnded {
  runKey: string;
  terminalReason: TerminalReason;
  /**
   * Overlap `steer`: keys of the events steered into the run that its model was given. Every other
   * event steered into it goes to the follow-up run. Absent when unknown (a run terminated by hand):
   * none counts as seen.
   */
  seen?: string[];
  /**
   * The steered events it took and its model never saw, in full: a coalescer that does not hold them
   * (a new chain, after the one that steered them was terminated by hand) takes them from here.
   */
  unseenEvents?: Offer['event'][];
  /** The run began its commit stage: under `cancel` it was not cancelled, and the restart batch drops the events it carried. */
  commitBegan?: boolean;
}

/**
 * Overlap `steer`: events the coalescer sends into its live run, in one update (`steer`). `id` is
 * the update's ID, so a retried delivery is the same update and the run answers it once.
 */
export interface SteerDelivery {
  coalescerId: string;
  runKey: string;
  id: string;
  events: Offer['event'][];
}

/** The run's answer to a steer: the keys it took (given to its model before the next turn) and those it refused (it had begun committing, or ended). */
export interface SteerAnswer {
  accepted: string[];
  refused: string[];
}

/**
 * One decided event, as the coalescer keeps it for dedup: `[eventKey, fingerprint prefix, decided at
 * (epoch ms), decision, run token of the run that took it (what follows `@` in its run key; one that
 * starts with `~` is the event's own: it opened the run; absent: none took it), the first offer's id
 * prefix (a retry of that very offer is answered as the first one was)]`. A tuple, so that tens of
 * thousands fit in a continue-as-new input.
 */
export type SeenEvent = [eventKey: string, fingerprint: string, atMs: number, decision: OfferDecision, runToken?: string, firstOffer?: string];

/**
 * An entry of the dedup table: a {@link SeenEvent}, or, past the newest few hundred, the same in one
 * compact string: 35 base64url characters (key hash, fingerprint and offer prefixes, time, decision), then its run reference (workflows/coalescer/seen-codec.ts).
 */
export type SeenRow = SeenEvent | string;

/** What the gate offers one coalescer: one event of one coalescing agent. */
export interface OfferInput {
  agent: string;
  wakeKey: string;
  coalescerId: string;
  policy: CoalescePolicy;
  offer: Offer;
}

/** What the coalescer knows of one event key (the `event` query): its decision and the run that took it. */
export interface EventStatus extends OfferAnswer {
  agent: string;
  wakeKey: string;
  eventKey: string;
  decidedAt: string;
  /**
   * A `skipped` whose record its live run has not taken yet: it names no run (`runKey` absent) until
   * the run takes it (the skip stands) or refuses it (the event is decided again, into a batch).
   */
  unconfirmed?: true;
}
