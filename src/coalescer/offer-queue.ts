import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { OfferInput, OfferAnswer } from '../core/coalesce-types';
import { captureContext } from '../tracing/spans';
import { GATE_PRIORITY } from '../core/priority';
import { OPEN_KEPT, OPEN_KNOWN_MS, startWithOffer } from './coalescer-start';
import { LastSeen } from './last-seen';
import { Backlog } from './backlog';
import { OfferSender, type OfferOutcome, type Waiting } from './offer-sender';
import { countOffer } from './offer-counts';

export type { OfferOutcome } from './offer-sender';

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
const MAX_PER_SEND = 200;
const MAX_SEND_CHARS = 256_000;
/**
 * Updates in flight per coalescer from one process. Temporal admits 10 in-flight updates per workflow
 * (`limit.workflowExecutionMaxInFlightUpdates`); two per process lets five gate processes storm one
 * wake key before the server refuses one, and a refused one is retried ({@link OfferQueue}).
 */
const MAX_IN_FLIGHT = 2;

/**
 * The gate's way to a coalescer: offers to one coalescer queue and go out in sends, each one `offer` update sent with
 * start (conflict policy USE_EXISTING, so the first offer brings the coalescer up). While updates to
 * a coalescer are in flight (two from this process), offers arriving meanwhile queue and go together
 * in the next update, each answered with its own decision: a hot wake key costs one update per send.
 *
 * Temporal's limits, and how this stays inside them under a storm from several processes:
 * - 10 updates in flight per workflow: two per process; a refusal (another process's updates fill
 *   the rest) is not an error, the send goes again after a jittered back-off, and offers arriving
 *   meanwhile join it. An update held at a continue-as-new and sent again (STUCK_AFTER_MS) counts
 *   against the limit until that turn's run is gone, at most two of them per process.
 * - 2,000 updates per run: the coalescer continues as new when Temporal suggests it (near that
 *   count or the history size), and sending offers together keeps the count far below the number of events.
 * - Payload size: a send stops at {@link MAX_PER_SEND} offers or {@link MAX_SEND_CHARS} characters.
 *
 * An update is not durable until a worker has accepted it. So an offer not decided within its wait
 * (no worker polls, or one is slow) goes again as an `offer` signal-with-start, which is in the
 * coalescer's history as soon as the server answers: the gate can then answer `accepted` and lose
 * nothing. Both may arrive; the coalescer repeats the first answer to a repeated offer id.
 *
 * This holds the lanes (one per coalescer: its queue, its slots, its start); offer-sender.ts makes a
 * send, and makes it again when held, refused or not decided in time.
 */
export class OfferQueue {
  private readonly lanes = new Map<string, Lane>();
  private readonly open = new LastSeen(OPEN_KEPT);
  private readonly backlog: Backlog;
  private readonly sender: OfferSender;

  /** `startBacklog`: workflow tasks waiting on the task queue past which new keys go by update, not start ({@link Backlog}). */
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    opts: { startBacklog?: number } = {},
  ) {
    this.backlog = new Backlog(client, taskQueue, opts.startBacklog);
    this.sender = new OfferSender(client, taskQueue);
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
      w.timer = setTimeout(() => void this.sender.fallBack(w), waitMs);
      if (first) lane.queue.unshift(w);
      else lane.queue.push(w);
    });
    // On the next turn, not now: the offers of one burst (webhook requests, a queue read, many callers
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

  private take(lane: Lane): Waiting[] {
    const taken: Waiting[] = [];
    let chars = 0;
    while (lane.queue.length && taken.length < MAX_PER_SEND) {
      const w = lane.queue[0]!;
      if (w.settled) {
        lane.queue.shift();
        continue;
      }
      const size = JSON.stringify(w.input.offer).length;
      if (taken.length && chars + size > MAX_SEND_CHARS) break;
      chars += size;
      taken.push(lane.queue.shift()!);
    }
    return taken;
  }

  private drain(id: string, lane: Lane): void {
    while (!lane.starting && lane.inFlight < MAX_IN_FLIGHT && lane.queue.length) {
      const taken = this.take(lane);
      if (!taken.length) break;
      lane.inFlight += 1;
      this.sender.send(id, { start: lane.start, release: () => this.done(id, lane) }, taken, 0);
    }
    if (lane.inFlight === 0 && lane.queue.length === 0 && !lane.scheduled && !lane.starting) this.lanes.delete(id);
  }

  private done(id: string, lane: Lane): void {
    lane.inFlight -= 1;
    this.drain(id, lane);
  }
}
