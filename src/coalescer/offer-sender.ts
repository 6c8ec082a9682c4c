import { isGrpcDeadlineError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client, type WithStartWorkflowOperation } from '@temporalio/client';
import type { OfferInput, Offer, OfferAnswer } from '../core/coalesce-types';
import { errorChainText, isInFlightRefusal } from '../core/failures';
import { offerUpdate } from '../core/messages';
import { inContext } from '../tracing/spans';
import { offerBySignal } from './coalescer-start';
import { LastSeen } from './last-seen';
import { countOffer } from './offer-counts';

/** An offer's fate: the coalescer's decision, or `accepted` (taken durably by signal, not decided within the wait). */
export type OfferOutcome = { kind: 'decided'; answer: OfferAnswer } | { kind: 'accepted' };

/** One offer waiting for its outcome. */
export interface Waiting {
  input: OfferInput;
  /** The trace context the offer was made in (tracing on): its send's update is made in the first offer's. */
  trace: unknown;
  settle: (o: OfferOutcome) => void;
  fail: (err: unknown) => void;
  settled: boolean;
  timer?: NodeJS.Timeout;
}

/** The lane slot a send holds (offer-queue.ts): the update's start of the coalescer, and how to give the slot back. */
export interface Slot {
  start: () => WithStartWorkflowOperation<never>;
  release: () => void;
}

/** Back-off after an in-flight-limit refusal: from this, doubling, jittered, at most 2 s. */
const REFUSAL_BACKOFF_MS = 50;
/**
 * An update not answered after this long is sent again, as a new update with the offers still waiting
 * (the coalescer answers a repeated offer id with its first answer). An update that reaches a
 * coalescer while it continues as new can be held by the server until that coalescer's next
 * continue-as-new (in bench:coalesce's hot key, every 1.5 to 2 s), and so can every offer queued
 * behind it; a hot coalescer answers an update in about 15 ms, and 60 ms at p99.
 */
const STUCK_AFTER_MS = 750;
/** Resends of one send's offers past the first, at most: under a load that makes every update slow, resending would only add to it. */
const MAX_RESENDS = 2;
/**
 * An update is sent again only if its coalescer answered this process within this long: it is live,
 * and this update is held. With no worker polling (or one taking a coalescer over), a resend would
 * only add an update to the server's in-flight count; the decision wait's signal takes care of those.
 */
const LIVE_WITHIN_MS = 5_000;
/** Coalescers whose last answer is remembered past their lane's life; past this many, those older than LIVE_WITHIN_MS are forgotten. */
const ANSWERED_KEPT = 4096;
/** An update's longest wait for its outcome: past it, the slot is freed (its offers went by signal long before). */
const UPDATE_DEADLINE_MS = 60_000;

/** The update's own deadline passed (the client's, or the server's wait for its outcome): it may yet be taken. */
const isUpdateTimeout = (err: unknown) => err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isGrpcDeadlineError(err);

/**
 * The coalescer did not take the update, or its run that took it is gone, and sending it again is
 * safe (the coalescer answers a repeated offer id with its first answer): it closed or continued as
 * new between its last workflow task and this update (the next one reaches its new run), the
 * workflow task that would have taken it failed (as when the coalescer continues as new while
 * updates arrive), or a person reset it while the update waited (its new run takes the update again,
 * reapplied, and answers a resend from its first decision; measured by the probe in
 * tools/probes/reset-reapply.ts).
 */
const isNotTaken = (err: unknown) =>
  /already completed|workflow execution.*(completed|closed)|unexpected workflow task failure|workflow task in failed state|completed before the update completed/i.test(
    errorChainText(err),
  );

/** Settle a waiting offer once: its wait's timer is cleared. */
function finish(w: Waiting, how: () => void): void {
  if (w.settled) return;
  w.settled = true;
  clearTimeout(w.timer);
  how();
}

/** One send of a lane's offers: `over` is set once it has given its lane slot on (answered, failed, retried or resent). */
interface Sending {
  id: string;
  slot: Slot;
  offers: Waiting[];
  refusals: number;
  resends: number;
  over: boolean;
}

/**
 * How the offer queue's offers reach a coalescer (offer-queue.ts holds the lanes): a send as one
 * `offer` update with start; sent again when held (a live coalescer that has not answered within
 * STUCK_AFTER_MS), again after a back-off when refused, and as a signal when not decided in time.
 */
export class OfferSender {
  /**
   * When each coalescer last answered an update from this process. Kept apart from its lane, which
   * is dropped whenever it is idle: a wake key offered to every few hundred ms has no lane between
   * offers, and an update of it held at a continue-as-new would otherwise wait out the decision wait.
   */
  private readonly answered = new LastSeen(ANSWERED_KEPT, LIVE_WITHIN_MS);

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /** Not decided in time: send the offer as a signal (durable on the server's answer) and answer `accepted`. */
  async fallBack(w: Waiting): Promise<void> {
    if (w.settled) return;
    const { input } = w;
    try {
      await inContext(w.trace, () => offerBySignal(this.client, this.taskQueue, input, [input.offer]));
      countOffer('fallbackSignals');
      finish(w, () => w.settle({ kind: 'accepted' }));
    } catch (err) {
      finish(w, () => w.fail(err));
    }
  }

  /**
   * Send `given` in the lane slot the caller holds. Never throws: it runs from timers and immediates,
   * where an exception would take the process down; a client call that throws fails its offers.
   */
  send(id: string, slot: Slot, given: Waiting[], refusals: number, resends = 0): void {
    // A retry after a back-off, or a resend, can find every offer settled meanwhile (their waits ended
    // and they went by signal): nothing to send, and the slot goes back to the lane.
    const waiting = given.filter((w) => !w.settled);
    if (!waiting.length) {
      slot.release();
      return;
    }
    const offers: Offer[] = waiting.map((w) => w.input.offer);
    countOffer('updates');
    countOffer('offers', offers.length);
    const s: Sending = { id, slot, offers: waiting, refusals, resends, over: false };
    const watchdog =
      resends < MAX_RESENDS
        ? setTimeout(() => {
            const unsettled = waiting.filter((w) => !w.settled);
            if (s.over || !unsettled.length || !this.answered.within(id, LIVE_WITHIN_MS)) return;
            // Not answered in far longer than a coalescer takes: held by the server (see STUCK_AFTER_MS).
            // The resend takes this send's slot; this one's answer, should it still come, settles nothing twice.
            s.over = true;
            countOffer('stuckResends');
            this.send(id, slot, waiting, refusals, resends + 1);
          }, STUCK_AFTER_MS)
        : undefined;
    watchdog?.unref();
    // In a promise, so that a client call that throws at once takes the failure path below.
    void new Promise<OfferAnswer[]>((resolve) =>
      resolve(
        inContext(waiting[0]!.trace, () =>
          this.client.withDeadline(Date.now() + UPDATE_DEADLINE_MS, () =>
            this.client.workflow.executeUpdateWithStart(offerUpdate, { args: [offers], startWorkflowOperation: slot.start() }),
          ),
        ),
      ),
    )
      .then(
        (answers) => {
          clearTimeout(watchdog);
          this.decided(s, answers);
        },
        (err: unknown) => {
          clearTimeout(watchdog);
          this.failed(s, err);
        },
      )
      .catch((err: unknown) => {
        // A defect in the handlers above: fail what still waits rather than reject where nothing catches it.
        clearTimeout(watchdog);
        waiting.forEach((w) => finish(w, () => w.fail(err)));
        if (s.over) return;
        s.over = true;
        slot.release();
      });
  }

  /** The coalescer answered: each offer with its decision. */
  private decided(s: Sending, answers: OfferAnswer[]): void {
    const { offers } = s;
    this.answered.note(s.id);
    const list: OfferAnswer[] = Array.isArray(answers) ? answers : [];
    offers.forEach((w, i) => {
      const a = list[i];
      finish(w, () => (a ? w.settle({ kind: 'decided', answer: a }) : w.fail(new Error(`the coalescer answered ${list.length} of ${offers.length} offers`))));
    });
    if (s.over) return;
    s.over = true;
    s.slot.release();
  }

  /** The update failed: sent again after a back-off, by signal, or the offers fail. */
  private failed(s: Sending, err: unknown): void {
    const { id, slot, offers, refusals, resends } = s;
    if (s.over) return; // resent: the resend answers for these offers
    s.over = true;
    const refused = isInFlightRefusal(err);
    if ((refused || isNotTaken(err)) && offers.some((w) => !w.settled) && refusals < 12) {
      // Refused before the coalescer saw it: send it again after a back-off (settled offers went by signal).
      if (refused) countOffer('inFlightRefusals');
      const backoff = Math.min(2000, REFUSAL_BACKOFF_MS * 2 ** refusals) * (0.5 + Math.random());
      setTimeout(() => this.send(id, slot, offers, refusals + 1, resends), backoff).unref();
      return;
    }
    if (isUpdateTimeout(err)) {
      // The update ran out of time (a coalescer slow to take it, under a backlog): it may still be
      // taken. Each offer still waiting goes by signal instead, answered `accepted` once the server
      // holds it; the coalescer answers a repeated offer id with its first decision, so a late
      // update and the signal make one decision. Only a signal that fails too fails the offer.
      offers.forEach((w) => void this.fallBack(w));
      slot.release();
      return;
    }
    // The update's fate is unknown (the server restarting, a client defect): an offer still
    // waiting fails, so that its caller answers 503 and the sender retries; its retry is deduplicated.
    offers.forEach((w) => finish(w, () => w.fail(err)));
    slot.release();
  }
}
