import type { SearchAttributePair, TypedSearchAttributes } from '@temporalio/common';
import { deliveriesOf, keptDeliveryIds } from './delivery-ids';
import type { RunInput } from './run-types';
import {
  MAX_DELIVERY_IDS_INDEXED,
  WakeAbsorbedEventKeys,
  WakeAgent,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeEntity,
  WakeEventKey,
  WakeEventType,
  WakeKey,
  WakeOccurredAt,
  WakeSource,
} from './search-attributes';

/**
 * Whether a run indexes itself (search attributes): not a `wakegate shadow` session's run (no query
 * of runs is about it); a live shadow does, as `<agent>/shadow` (its spend, `wakegate shadow report`).
 */
export function isIndexed(input: RunInput): boolean {
  return input.origin.kind !== 'shadow' || input.origin.live === true;
}

/** What a run has seen that its index shows: the events it took, its deliveries. */
export interface RunSeen {
  readonly absorbed: readonly { eventKey: string }[];
  readonly deliveryIds: readonly string[];
  readonly deliveryCount: number;
}

/** What a run has seen when it starts: every delivery of every event its batch took, or its own delivery; a held run's, carried. */
export function seenAtStart(input: RunInput): RunSeen {
  const resumed = input.resumedHold;
  const batch = input.origin.kind === 'batch' ? input.origin : undefined;
  if (resumed) return { deliveryIds: resumed.deliveryIds, absorbed: resumed.absorbed ?? batch?.absorbed ?? [], deliveryCount: resumed.deliveryCount };
  const events = batch ? batch.absorbed : input.deliveryId ? [{ deliveryIds: [input.deliveryId] }] : [];
  return {
    deliveryIds: keptDeliveryIds(events),
    absorbed: batch?.absorbed ?? [],
    deliveryCount: Math.max(
      1,
      events.reduce((n, e) => n + deliveriesOf(e), 0),
    ),
  };
}

/** A run's index before it ends: what it is about (event, source, entity, type, agent, wake key, time) and what it has seen. */
export function runIndex(input: RunInput, seen: RunSeen): SearchAttributePair[] {
  return [
    { key: WakeEventKey, value: input.eventKey },
    { key: WakeSource, value: input.source },
    { key: WakeEntity, value: input.entity },
    { key: WakeEventType, value: input.type },
    { key: WakeAgent, value: input.agent },
    { key: WakeKey, value: input.wakeKey },
    { key: WakeOccurredAt, value: new Date(input.occurredAt) },
    ...(seen.absorbed.length ? [{ key: WakeAbsorbedEventKeys, value: seen.absorbed.slice(0, MAX_DELIVERY_IDS_INDEXED).map((e) => e.eventKey) }] : []),
    { key: WakeDeliveryIds, value: seen.deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
    { key: WakeDeliveryCount, value: seen.deliveryCount },
  ];
}

/**
 * The search attributes a run is started with (workflow start, `startChild`): its index as it starts,
 * so its first workflow task need not upsert it (an upsert is a billed action, a start's attributes
 * are not). None for a run that does not index itself. An empty list is left out: Temporal stores
 * no empty value.
 */
export function startIndex(input: RunInput): SearchAttributePair[] {
  if (!isIndexed(input)) return [];
  return runIndex(input, seenAtStart(input)).filter((p) => !Array.isArray(p.value) || p.value.length > 0);
}

/** Whether a run already carries `index` (given at its start, or carried through continue-as-new); an empty list reads as absent. */
export function carriesIndex(carried: TypedSearchAttributes, index: readonly SearchAttributePair[]): boolean {
  return index.every((p) => sameValue(carried.get(p.key), p.value));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) {
    const x = (a ?? []) as unknown[];
    const y = (b ?? []) as unknown[];
    return Array.isArray(x) && Array.isArray(y) && x.length === y.length && x.every((v, i) => v === y[i]);
  }
  return a === b;
}
