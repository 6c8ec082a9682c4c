import { MAX_DELIVERY_IDS_INDEXED } from './search-attributes';

/*
 * Delivery ids, as an event and a run keep them: every delivery of an event (a webhook's, a queue
 * message's, a tick's) is counted, but only the first few ids and the newest are kept. A producer
 * that redelivers one event without end (each time under a new delivery id) would otherwise grow the
 * event in its coalescer's pending batch, and so the coalescer's continue-as-new input, and the run's
 * record and result, past any bound.
 */

/** Delivery ids an event keeps at most: its first two and its newest (a batch holds up to maxEventsPerRun events). */
export const DELIVERY_IDS_KEPT = 3;
/** Delivery ids a run keeps at most, of all its events' deliveries: the first ones and the newest, as many as its index shows. */
export const RUN_DELIVERY_IDS_KEPT = MAX_DELIVERY_IDS_INDEXED;

/** Whatever keeps delivery ids: an event (its `deliveryCount` only once past those kept), a run (its `deliveryCount` always). */
export interface Delivered {
  /** The first delivery ids and the newest. */
  deliveryIds: string[];
  /** Every delivery counted, those whose ids were let go too; an event's is absent while its ids are all kept. */
  deliveryCount?: number;
}

/** How many deliveries `d` has counted: its ids kept, and those let go. */
export function deliveriesOf(d: Readonly<Delivered>): number {
  return d.deliveryCount ?? d.deliveryIds.length;
}

/**
 * Keep `id` among `ids` when they do not hold it yet: past `kept` it takes the newest's place.
 * Returns whether it was new to those kept (an id let go before counts again if it comes again).
 */
export function keepDeliveryId(ids: string[], id: string, kept = DELIVERY_IDS_KEPT): boolean {
  if (ids.includes(id)) return false;
  if (ids.length >= kept) ids[ids.length - 1] = id;
  else ids.push(id);
  return true;
}

/** An event's redeliveries: each new id kept within the bound, and counted. */
export function addDeliveries(e: Delivered, ids: readonly string[]): void {
  let count = deliveriesOf(e);
  for (const id of ids) if (keepDeliveryId(e.deliveryIds, id)) count += 1;
  if (count > e.deliveryIds.length) e.deliveryCount = count;
}

/** The ids a run keeps of the deliveries of the events it took, first ones first, the newest last. */
export function keptDeliveryIds(events: readonly Readonly<Delivered>[]): string[] {
  const ids: string[] = [];
  for (const e of events) for (const id of e.deliveryIds) keepDeliveryId(ids, id, RUN_DELIVERY_IDS_KEPT);
  return ids;
}

/** The ids `shown` of those kept, and how many deliveries besides them were counted: `a,b,c +14998`. */
export function deliveriesText(d: Readonly<Delivered>, separator = ',', shown = RUN_DELIVERY_IDS_KEPT): string {
  const ids = d.deliveryIds.slice(0, shown);
  const more = Math.max(deliveriesOf(d), d.deliveryIds.length) - ids.length;
  return ids.join(separator) + (more > 0 ? `${ids.length ? ' ' : ''}+${more}` : '');
}
