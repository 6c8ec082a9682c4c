import { isGrpcDeadlineError, WithStartWorkflowOperation, WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';
import type { OfferInput, Offer, OfferAnswer } from '../core/coalesce-types';
import { errorChainText, isInFlightRefusal } from '../core/failures';
import { offerUpdate } from '../core/messages';
import { captureContext, inContext } from '../tracing/spans';
import { GATE_PRIORITY } from '../core/priority';
import { OPEN_KEPT, OPEN_KNOWN_MS, offerBySignal, startWithOffer } from './coalescer-start';
import { LastSeen } from './last-seen';
import { Backlog } from './backlog';
import { countOffer } from './offer-counts';

/** An offer's fate: the coalescer's decision, or `accepted` (taken durably by signal, not decided within the wait). */
export type OfferOutcome = { kind: 'decided'; answer: OfferAnswer } | { kind: 'accepted' };

interface Waiting {
  input: OfferInput;
  /** The trace context the offer was made in (tracing on): its batch's update is sent in the first offer's. */
  trace: unknown;
  settle: (o: OfferOutcome) => void;
  fail: (err: unknown) => void;
  settled: boolean;
  timer?: NodeJS.Timeout;
}

interface Lane {
  start: () => WithStartWorkflowOperation<never>;
  queue: Waiting[];
  inFlight: number;
  /** A drain is due on the next turn of the event loop. */
  scheduled: boolean;
  /** The coalescer is being started with a first offer: the offers queued meanwhile wait for it. */
  starting?: boolean;
}

/** Offers one update carries at most, by count and by JSON characters (an update is one payload in history: Temporal's limit is 2 MB). */
const MAX_BATCH = 200;
const MAX_BATCH_CHARS = 256_000;
/**
 * Updates in flight per coalescer from one process. Temporal admits 10 in-flight updates per workflow
 * (`limit.workflowExecutionMaxInFlightUpdates`); two per process lets five gate processes storm one
 * wake key before the server refuses one, and a refused one is retried ({@link OfferBatcher}).
 */
const MAX_IN_FLIGHT = 2;
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
/** Sends of one batch past the first, at most: under a load that makes every update slow, resending would only add to it. */
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
 * The coalescer did not take the update, and sending it again is safe (the coalescer answers a
 * repeated offer id with its first answer): it closed or continued as new between its last workflow
 * task and this update (the next one reaches its new run), or the workflow task that would have
 * taken it failed (as when the coalescer continues as new while updates arrive).
 */
const isNotTaken = (err: unknown) =>
  /already completed|workflow execution.*(completed|closed)|unexpected workflow task failure|workflow task in failed state/i.test(errorChainText(err));

/**
 * The gate's way to a coalescer: offers to one coalescer are batched into `offer` updates sent with
 * start (conflict policy USE_EXISTING, so the first offer brings the coalescer up). While updates to
 * a coalescer are in flight (two from this process), offers arriving meanwhile queue and go together
 * in the next update, each answered with its own decision: a hot wake key costs one update per batch.
 *
 * Temporal's limits, and how this stays inside them under a storm from several processes:
 * - 10 updates in flight per workflow: two per process; a refusal (another process's updates fill
 *   the rest) is not an error, the batch goes again after a jittered back-off, and offers arriving
 *   meanwhile join it. An update held at a continue-as-new and sent again (STUCK_AFTER_MS) counts
 *   against the limit until that turn's run is gone, at most two of them per process.
 * - 2,000 updates per run: the coalescer continues as new when Temporal suggests it (near that
 *   count or the history size), and batching keeps the count far below the number of events.
 * - Payload size: a batch stops at {@link MAX_BATCH} offers or {@link MAX_BATCH_CHARS} characters.
 *
 * An update is not durable until a worker has accepted it. So an offer not decided within its wait
 * (no worker polls, or one is slow) goes again as an `offer` signal-with-start, which is in the
 * coalescer's history as soon as the server answers: the gate can then answer `accepted` and lose
 * nothing. Both may arrive; the coalescer repeats the first answer to a repeated offer id.
 */
export class OfferBatcher {
  private readonly lanes = new Map<string, Lane>();
  /**
   * When each coalescer last answered an update from this process. Kept apart from its lane, which
   * is dropped whenever it is idle: a wake key offered to every few hundred ms has no lane between
   * offers, and an update of it held at a continue-as-new would otherwise wait out the decision wait.
   */
  private readonly answered = new LastSeen(ANSWERED_KEPT, LIVE_WITHIN_MS);
  private readonly open = new LastSeen(OPEN_KEPT);
  private readonly backlog: Backlog;

  /** `startBacklog`: workflow tasks waiting on the task queue past which new keys go by update, not start ({@link Backlog}). */
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    opts: { startBacklog?: number } = {},
  ) {
    this.backlog = new Backlog(client, taskQueue, opts.startBacklog);
  }

  /**
   * Offer one event; settles with its decision, or `accepted` once taken by signal after `waitMs`.
   * Rejects when Temporal took neither. A key with no coalescer open (none this process knows of)
   * starts one with the offer (src/coalescer/coalescer-start.ts): answered at a start's speed, unless
   * the workers are behind (src/coalescer/backlog.ts): then by update, at their pace.
   */
  offer(input: OfferInput, waitMs: number): Promise<OfferOutcome> {
    const id = input.coalescerId;
    if (!this.lanes.has(id) && !this.open.within(id, OPEN_KNOWN_MS)) {
      if (!this.backlog.behind()) return this.startFirst(input, waitMs);
      countOffer('startsDeferred');
    }
    return this.enqueue(input, waitMs);
  }

  private async startFirst(input: OfferInput, waitMs: number): Promise<OfferOutcome> {
    const id = input.coalescerId;
    const lane = this.laneOf(input);
    lane.starting = true;
    let answer: OfferAnswer | undefined;
    try {
      answer = await startWithOffer(this.client, this.taskQueue, input);
      this.open.note(id);
    } catch (err) {
      lane.starting = false;
      this.drain(id, lane); // the offers that queued behind the start
      throw err;
    }
    lane.starting = false;
    // Refused, one is open (started elsewhere, or outlived this process's memory): this offer goes by
    // update ahead of those that queued behind its start, so they are decided in the order made.
    const refused = answer ? undefined : this.enqueue(input, waitMs, true);
    this.drain(id, lane); // with the offers that queued behind the start
    if (!answer) return refused!;
    countOffer('starts');
    return { kind: 'decided', answer };
  }

  private enqueue(input: OfferInput, waitMs: number, first = false): Promise<OfferOutcome> {
    const lane = this.laneOf(input);
    const mine = new Promise<OfferOutcome>((settle, fail) => {
      const w: Waiting = { input, trace: captureContext(), settle, fail, settled: false };
      w.timer = setTimeout(() => void this.fallBack(w), waitMs);
      if (first) lane.queue.unshift(w);
      else lane.queue.push(w);
    });
    // On the next turn, not now: the offers of one burst (a webhook batch, a queue read, many callers
    // at once) made in this turn go together in the coalescer's first update.
    if (!lane.scheduled) {
      lane.scheduled = true;
      setImmediate(() => {
        lane.scheduled = false;
        this.drain(input.coalescerId, lane);
      });
    }
    return mine;
  }

  private laneOf(input: OfferInput): Lane {
    let lane = this.lanes.get(input.coalescerId);
    if (!lane) {
      lane = {
        start: () =>
          new WithStartWorkflowOperation('coalescerWorkflow', {
            workflowId: input.coalescerId,
            taskQueue: this.taskQueue,
            args: [{ agent: input.agent, wakeKey: input.wakeKey, policy: input.policy }],
            workflowIdConflictPolicy: 'USE_EXISTING',
            priority: GATE_PRIORITY,
          }) as WithStartWorkflowOperation<never>,
        queue: [],
        inFlight: 0,
        scheduled: false,
      };
      this.lanes.set(input.coalescerId, lane);
    }
    return lane;
  }

  /** Not decided in time: send the offer as a signal (durable on the server's answer) and answer `accepted`. */
  private async fallBack(w: Waiting): Promise<void> {
    if (w.settled) return;
    const { input } = w;
    try {
      await inContext(w.trace, () => offerBySignal(this.client, this.taskQueue, input, [input.offer]));
      countOffer('fallbackSignals');
      this.finish(w, () => w.settle({ kind: 'accepted' }));
    } catch (err) {
      this.finish(w, () => w.fail(err));
    }
  }

  private finish(w: Waiting, how: () => void): void {
    if (w.settled) return;
    w.settled = true;
    clearTimeout(w.timer);
    how();
  }

  private take(lane: Lane): Waiting[] {
    const batch: Waiting[] = [];
    let chars = 0;
    while (lane.queue.length && batch.length < MAX_BATCH) {
      const w = lane.queue[0]!;
      if (w.settled) {
        lane.queue.shift();
        continue;
      }
      const size = JSON.stringify(w.input.offer).length;
      if (batch.length && chars + size > MAX_BATCH_CHARS) break;
      chars += size;
      batch.push(lane.queue.shift()!);
    }
    return batch;
  }

  private drain(id: string, lane: Lane): void {
    while (!lane.starting && lane.inFlight < MAX_IN_FLIGHT && lane.queue.length) {
      const batch = this.take(lane);
      if (!batch.length) break;
      lane.inFlight += 1;
      this.send(id, lane, batch, 0);
    }
    if (lane.inFlight === 0 && lane.queue.length === 0 && !lane.scheduled && !lane.starting) this.lanes.delete(id);
  }

  /**
   * Send `batch` in the lane slot the caller holds. Never throws: it runs from timers and immediates,
   * where an exception would take the process down; a client call that throws fails its offers.
   */
  private send(id: string, lane: Lane, given: Waiting[], refusals: number, resends = 0): void {
    // A retry after a back-off, or a resend, can find every offer settled meanwhile (their waits ended
    // and they went by signal): nothing to send, and the slot goes back to the lane.
    const batch = given.filter((w) => !w.settled);
    if (!batch.length) {
      this.done(id, lane);
      return;
    }
    const offers: Offer[] = batch.map((w) => w.input.offer);
    countOffer('updates');
    countOffer('offers', offers.length);
    /** Set once this send has given its lane slot on: answered, failed, retried or resent. */
    let over = false;
    const watchdog =
      resends < MAX_RESENDS
        ? setTimeout(() => {
            const waiting = batch.filter((w) => !w.settled);
            if (over || !waiting.length || !this.answered.within(id, LIVE_WITHIN_MS)) return;
            // Not answered in far longer than a coalescer takes: held by the server (see STUCK_AFTER_MS).
            // The resend takes this send's slot; this one's answer, should it still come, settles nothing twice.
            over = true;
            countOffer('stuckResends');
            this.send(id, lane, waiting, refusals, resends + 1);
          }, STUCK_AFTER_MS)
        : undefined;
    watchdog?.unref();
    // In a promise, so that a client call that throws at once takes the failure path below.
    void new Promise<OfferAnswer[]>((resolve) =>
      resolve(
        inContext(batch[0]!.trace, () =>
          this.client.withDeadline(Date.now() + UPDATE_DEADLINE_MS, () =>
            this.client.workflow.executeUpdateWithStart(offerUpdate, { args: [offers], startWorkflowOperation: lane.start() }),
          ),
        ),
      ),
    )
      .then(
        (answers) => {
          clearTimeout(watchdog);
          this.answered.note(id);
          const list: OfferAnswer[] = Array.isArray(answers) ? answers : [];
          batch.forEach((w, i) => {
            const a = list[i];
            this.finish(w, () =>
              a ? w.settle({ kind: 'decided', answer: a }) : w.fail(new Error(`the coalescer answered ${list.length} of ${batch.length} offers`)),
            );
          });
          if (over) return;
          over = true;
          this.done(id, lane);
        },
        (err: unknown) => {
          clearTimeout(watchdog);
          if (over) return; // resent: the resend answers for these offers
          over = true;
          const refused = isInFlightRefusal(err);
          if ((refused || isNotTaken(err)) && batch.some((w) => !w.settled) && refusals < 12) {
            // Refused before the coalescer saw it: send it again after a back-off (settled offers went by signal).
            if (refused) countOffer('inFlightRefusals');
            const backoff = Math.min(2000, REFUSAL_BACKOFF_MS * 2 ** refusals) * (0.5 + Math.random());
            setTimeout(() => this.send(id, lane, batch, refusals + 1, resends), backoff).unref();
            return;
          }
          if (isUpdateTimeout(err)) {
            // The update ran out of time (a coalescer slow to take it, under a backlog): it may still be
            // taken. Each offer still waiting goes by signal instead, answered `accepted` once the server
            // holds it; the coalescer answers a repeated offer id with its first decision, so a late
            // update and the signal make one decision. Only a signal that fails too fails the offer.
            batch.forEach((w) => void this.fallBack(w));
            this.done(id, lane);
            return;
          }
          // The update's fate is unknown (the server restarting, a client defect): an offer still
          // waiting fails, so that its caller answers 503 and the sender retries; its retry is deduplicated.
          batch.forEach((w) => this.finish(w, () => w.fail(err)));
          this.done(id, lane);
        },
      )
      .catch((err: unknown) => {
        // A defect in the handlers above: fail what still waits rather than reject where nothing catches it.
        clearTimeout(watchdog);
        batch.forEach((w) => this.finish(w, () => w.fail(err)));
        if (over) return;
        over = true;
        this.done(id, lane);
      });
  }

  private done(id: string, lane: Lane): void {
    lane.inFlight -= 1;
    this.drain(id, lane);
  }
}
