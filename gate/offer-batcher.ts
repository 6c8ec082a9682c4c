import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { AdmissionInput, Offer, OfferAnswer } from '../core/coalesce-types';
import { offerUpdate } from '../core/messages';
import { captureContext, inContext } from '../tracing/spans';

interface Waiting {
  offer: Offer;
  /** The trace context the offer was made in (tracing on): its batch's update is sent in the first offer's. */
  trace: unknown;
  resolve: (a: OfferAnswer) => void;
  reject: (err: unknown) => void;
}

interface Lane {
  start: () => WithStartWorkflowOperation<never>;
  queue: Waiting[];
  inFlight: number;
}

/** Offers one update carries at most (bounds the update's payload). */
const MAX_BATCH = 100;
/**
 * Updates in flight per coalescer from one process. Temporal admits 10 in-flight updates per
 * workflow; a few per process leaves room for other workers.
 */
const MAX_IN_FLIGHT = 3;

/**
 * Batches offers to one coalescer: while updates to a coalescer are in flight (at most three from
 * this process), the offers that arrive meanwhile queue up and go together in the next `offer`
 * update, each answered with its own decision. A hot wake key then costs one update per batch
 * instead of one per event, which keeps it under Temporal's in-flight update limit per workflow.
 *
 * Batching does not weaken dedup: every offer carries its admission record's run, and the coalescer
 * repeats its answer to an offer it has seen (across continue-as-new too), so a retried offer in
 * another batch gets the same decision. Each caller's promise settles with its own answer, or
 * rejects as the update did (the admission record's activity then retries).
 */
export class OfferBatcher {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly client: () => Client) {}

  offer(input: AdmissionInput, taskQueue: string): Promise<OfferAnswer> {
    let lane = this.lanes.get(input.coalescerId);
    if (!lane) {
      lane = {
        start: () =>
          new WithStartWorkflowOperation('coalescerWorkflow', {
            workflowId: input.coalescerId,
            taskQueue,
            args: [{ agent: input.agent, wakeKey: input.wakeKey, policy: input.policy }],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }) as WithStartWorkflowOperation<never>,
        queue: [],
        inFlight: 0,
      };
      this.lanes.set(input.coalescerId, lane);
    }
    const mine = new Promise<OfferAnswer>((resolve, reject) => lane.queue.push({ offer: input.offer, trace: captureContext(), resolve, reject }));
    this.drain(input.coalescerId, lane);
    return mine;
  }

  private drain(id: string, lane: Lane): void {
    while (lane.inFlight < MAX_IN_FLIGHT && lane.queue.length) {
      const batch = lane.queue.splice(0, MAX_BATCH);
      lane.inFlight += 1;
      void inContext(batch[0]!.trace, () =>
        this.client().workflow.executeUpdateWithStart(offerUpdate, { args: [batch.map((w) => w.offer)], startWorkflowOperation: lane.start() }),
      )
        .then(
          (answers) =>
            batch.forEach((w, i) =>
              answers[i] ? w.resolve(answers[i]) : w.reject(new Error(`the coalescer answered ${answers.length} of ${batch.length} offers`)),
            ),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          lane.inFlight -= 1;
          if (lane.inFlight === 0 && lane.queue.length === 0) this.lanes.delete(id);
          else this.drain(id, lane);
        });
    }
  }
}
