import type { CoalescerState, Offer, OfferAnswer, SeenEvent } from '../core/coalesce-types';
import type { RecordedEvent } from './history';

const EMPTY: CoalescerState = {
  newestVersion: {},
  recent: [],
  seen: [],
  lastActivityMs: 0,
  counts: { offered: 0, started: 0, coalesced: 0, skipped: 0, stale: 0, runs: 0 },
  runs: [],
  staleEvents: [],
};

/**
 * An open coalescer's answers read from its history, for when it cannot answer its query (no worker
 * polls): the state it started with (carried across continue-as-new) plus every `offer` update
 * answered since, each offered event with its answer and its dedup-table entry, and the stale ones in full. Its pending batch
 * and live run are not rebuilt (the runs show them); its counts are those it
 * started with, so the trail leaves them out.
 */
export function answersFromHistory(start: CoalescerState | undefined, history: readonly RecordedEvent[]): CoalescerState {
  const state: CoalescerState = structuredClone(start ?? EMPTY);
  const offers = new Map<string, Offer[]>();
  for (const e of history) {
    if (e.kind === 'update' && e.name === 'offer' && Array.isArray(e.input)) offers.set(e.id, e.input as Offer[]);
    if (e.kind !== 'update-done' || !Array.isArray(e.result)) continue;
    const asked = offers.get(e.id) ?? [];
    (e.result as OfferAnswer[]).forEach((answer, i) => {
      const offer = asked[i];
      if (!offer?.event?.eventKey) return;
      if (!answer.duplicate && answer.decision !== 'mismatch') {
        // Its dedup-table entry as the coalescer made it: decided when the update was answered.
        const opener = answer.runKey?.slice(answer.coalescerId.length + 1);
        const row: SeenEvent = [offer.event.eventKey, offer.event.fingerprint, Date.parse(e.at), answer.decision];
        if (opener && opener !== offer.event.eventKey) row.push(opener);
        state.seen.push(row);
      }
      state.recent.push({ eventKey: offer.event.eventKey, ...(offer.offerId ? { offerId: offer.offerId } : {}), answer });
      if (answer.decision === 'stale') {
        const { payload: _p, fingerprint: _f, bucketStart: _b, ...record } = offer.event;
        state.staleEvents.push(record);
      }
    });
  }
  return state;
}
