import { channel } from 'node:diagnostics_channel';

/** What an offer queue counts: updates sent, offers in them, refusals, signals, resends, starts. */
export type OfferCount = 'updates' | 'offers' | 'inFlightRefusals' | 'fallbackSignals' | 'stuckResends' | 'starts' | 'startsDeferred';

/**
 * The offer queues' counts, published as `{ count, n }` on the diagnostics channel
 * `wakegate:offer-queue` (node:diagnostics_channel), which the benchmarks and tests add up
 * (tools/bench/offer-stats.ts). Nothing is published while nobody subscribes; a channel is one per
 * name in the process, so a subscriber sees every copy of this module (the CLI bundle and the
 * deployment module it loads from source).
 */
const counts = channel('wakegate:offer-queue');

export function countOffer(count: OfferCount, n = 1): void {
  if (counts.hasSubscribers) counts.publish({ count, n });
}
