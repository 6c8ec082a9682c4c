import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { CoalescerState, CoalescerStatus, EventStatus, Offer, OfferAnswer, RunEnded, SteerAnswer, SeenRow } from './coalesce-types';
import type { AbsorbedEvent, ApprovalRuling, DeliveryNotice, KillRequest, UpdateAck, RunStatus } from './run-types';

/** Duplicate deliveries of an open run's event: their ids are recorded on the run (fire and forget). */
export const deliverySignal = defineSignal<[DeliveryNotice]>('delivery');

/** The open run's phase and the deliveries seen so far. */
export const statusQuery = defineQuery<RunStatus>('status');

/**
 * The kill switch: stops the run before its next step, cancels what is in flight, commits nothing
 * further; the run ends `cancelled`. An update, so the caller sees it accepted (rejected once the run is done).
 */
export const killUpdate = defineUpdate<UpdateAck, [KillRequest]>('kill');

/**
 * A person approves the irreversible effect the run is waiting on. A signal, not an update: a
 * decision that reaches a run in the same workflow task as other new events (a worker was down) must
 * replay in history order; an update accepted there replayed in another order than it ran (a
 * non-determinism the crash tests found with SDK 1.24). The CLI checks the `status` query first.
 */
export const approveSignal = defineSignal<[ApprovalRuling]>('approve');

/** A person rejects it: the effect is not made and the run ends `blocked`. */
export const rejectSignal = defineSignal<[ApprovalRuling]>('reject');

/**
 * Offer events to a coalescer (update-with-start from the gate, several to an update per process: src/coalescer/offer-queue.ts);
 * answers one decision per offer, in order.
 */
export const offerUpdate = defineUpdate<OfferAnswer[], [Offer[]]>('offer');

/**
 * The same offers when their update could not be answered in time (no worker is polling): a signal is
 * in the coalescer's history as soon as the server takes it, so the gate can answer `accepted`. The
 * coalescer decides them as offers (a retried offer id gets its first answer; an event decided already
 * is not taken twice).
 */
export const offerSignal = defineSignal<[Offer[]]>('offer');
/**
 * The dedup table of a chain terminated by hand, for the chain that takes over (adopted before the
 * offers that come after it): activities/coalescer/recover.ts.
 */
export const adoptSignal = defineSignal<[Adopt]>('adopt');

/** What a chain terminated by hand leaves the chain that takes over (activities/coalescer/recover.ts). */
export interface Adopt {
  seen: SeenRow[];
  seenOpeners?: Record<string, string>;
  /** Its chain, which its compact rows' short run references name (workflows/coalescer/seen-codec.ts `shortRef`). */
  chain?: string;
  newestVersion?: Record<string, number>;
  /** Events offered again instead: their rows are not adopted. */
  except?: string[];
  /** Its live run, open when the recovery looked: the new chain holds it as its own, so one run of the key is live at a time. */
  live?: NonNullable<CoalescerState['running']>;
  /** Its foreign runs (live runs of chains terminated before it, which it held), open when the recovery looked: held here as foreign runs. */
  foreign?: NonNullable<CoalescerState['running']>[];
}

/** A person re-armed a closed run: its coalescer forgets the events it took (answers their keys), so their next deliveries are decided afresh. */
export const forgetUpdate = defineUpdate<string[], [{ runKey: string }]>('forget');

/** What the coalescer decided for one event key within its dedup horizon (null: nothing). */
export const eventQuery = defineQuery<EventStatus | null, [{ eventKey: string }]>('event');

/**
 * A run tells its coalescer it has ended, so the next batch may start: when asked (`reportEnd`), or
 * when it failed. The coalescer execution that started it learns it from the child's result instead.
 */
export const runEndedSignal = defineSignal<[RunEnded]>('runEnded');

/**
 * A coalescer asks its live run to report its end by `runEnded` to `coalescerId` (the workflow ID,
 * so whichever of its executions is current then hears it): sent before the coalescer continues as
 * new with a live run it started (the next execution is not the run's parent), and by a chain that
 * adopted a live run (a coalescer terminated by hand). A run whose end is already known sends it at once.
 */
export const reportEndSignal = defineSignal<[{ coalescerId: string }]>('reportEnd');

/**
 * The coalescer's policy, pending and running batches, counts and recent runs, with the newest
 * `seenLast` entries of its dedup table (default 200; the table may hold thousands).
 */
export const coalescerQuery = defineQuery<CoalescerStatus, [{ seenLast?: number }?]>('coalescer');

/** The coalescer records on its live run the events it skipped for it (overlap `skip`), several to a signal. */
export const skippedSignal = defineSignal<[{ events: AbsorbedEvent[] }]>('skipped');

/**
 * Overlap `steer`: the coalescer sends its live run events that arrived while it ran (through an
 * activity: a workflow cannot send an update). An update, not a signal, so the coalescer learns
 * what the run took: the run accepts them only until it begins committing, in the same workflow
 * code that decides to commit, and refuses them after; refused events go to a follow-up run.
 */
export const steerUpdate = defineUpdate<SteerAnswer, [{ events: Offer['event'][] }]>('steer');

/** The coalescer tells a live run it is being cancelled for a restart (overlap `cancel`), and by which run. */
export const supersedeSignal = defineSignal<[{ by: string }]>('supersede');
