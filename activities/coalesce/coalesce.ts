import { activityInfo, getClient } from '@temporalio/activity';
import { OfferBatcher } from '../../gate/offer-batcher';
import type { CoalesceActivities } from '../../core/contracts';
import { steerRun } from './steer';

/** Activities of the coalescing path. */
export function createCoalesceActivities(): CoalesceActivities {
  // One batcher per worker process: offers to a hot coalescer from every admission record this
  // worker runs share its updates.
  const batcher = new OfferBatcher(() => getClient());
  return {
    /**
     * Offer one admitted event to its coalescer, starting the coalescer if none is running
     * (update-with-start, conflict policy USE_EXISTING), and return the coalescer's decision. The
     * activity of the event's admission record, so the offer is durable with the record.
     * Offers to one coalescer are batched ({@link OfferBatcher}); a retry is safe because the
     * coalescer repeats its answer to an offer from the same admission record's run.
     */
    async offerToCoalescer(input) {
      return batcher.offer(input, activityInfo().taskQueue);
    },
    /** Overlap `steer`: the coalescer's events for its live run, by update (activities/coalesce/steer.ts). */
    async steerRun(input) {
      return steerRun(getClient(), input);
    },
  };
}
