import { subscribe } from 'node:diagnostics_channel';
import type { OfferCount } from '../../src/coalescer/offer-counts';

/**
 * What the offer queues of this process have done since this module was loaded, added up from the
 * counts they publish (src/coalescer/offer-counts.ts): for the benchmarks, and the tests that check a
 * queue's branches. Read a count before and after what is measured.
 */
export const offerStats: Record<OfferCount, number> = {
  updates: 0,
  offers: 0,
  inFlightRefusals: 0,
  fallbackSignals: 0,
  stuckResends: 0,
  starts: 0,
  startsDeferred: 0,
};

// The channel's name, as src/coalescer/offer-counts.ts publishes on it.
subscribe('wakegate:offer-queue', (message) => {
  const { count, n } = message as { count: OfferCount; n: number };
  offerStats[count] += n;
});
