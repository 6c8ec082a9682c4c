import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TypedSearchAttributes } from '@temporalio/common';
import { carriesIndex, runIndex, seenAtStart, startIndex } from '../../src/core/run-index';
import { WakeAbsorbedEventKeys, WakeDeliveryCount, WakeDeliveryIds, WakeEventKey, WakeHeld } from '../../src/core/search-attributes';
import type { RunInput } from '../../src/core/run-types';
import { addDeliveries, deliveriesOf, deliveriesText, DELIVERY_IDS_KEPT, RUN_DELIVERY_IDS_KEPT } from '../../src/core/delivery-ids';
import { keyEvent } from '../../src/gate/key-event';
import { registryOf } from '../helpers/app';

const input = (deliveryId?: string): RunInput =>
  keyEvent(registryOf(), {
    source: 'ping',
    entity: 'canary',
    type: 'ping',
    occurredAt: '2026-12-02T14:05:00Z',
    payload: {},
    ...(deliveryId ? { deliveryId } : {}),
  }).input;

test('a run started with its start index carries the index its first workflow task would upsert: no upsert', () => {
  const i = input('d-1');
  const carried = new TypedSearchAttributes(startIndex(i));
  assert.equal(carriesIndex(carried, runIndex(i, seenAtStart(i))), true);
});

test('an empty list is left out of the start and reads as carried (Temporal stores no empty value)', () => {
  const i = input();
  const start = startIndex(i);
  assert.equal(
    start.some((p) => p.key.name === WakeDeliveryIds.name),
    false,
  );
  assert.equal(carriesIndex(new TypedSearchAttributes(start), runIndex(i, seenAtStart(i))), true);
});

test('a run started without its index (a Schedule started it), or with another value, is indexed in its first task', () => {
  const i = input('d-1');
  const index = runIndex(i, seenAtStart(i));
  assert.equal(carriesIndex(new TypedSearchAttributes(), index), false);
  assert.equal(carriesIndex(new TypedSearchAttributes([{ key: WakeEventKey, value: i.eventKey }]), index), false);
  const more = runIndex(i, { ...seenAtStart(i), deliveryIds: ['d-1', 'd-2'], deliveryCount: 2 });
  assert.equal(carriesIndex(new TypedSearchAttributes(startIndex(i)), more), false);
  // Other attributes carried beside it (WakeHeld through a continue-as-new) do not matter.
  assert.equal(carriesIndex(new TypedSearchAttributes([...startIndex(i), { key: WakeHeld, value: 'cap' }]), index), true);
});

test("a coalesced run's start index holds every event it took and each of their deliveries", () => {
  const i = input('d-1');
  const absorbed = [
    { eventKey: 'e-1', source: 's', type: 't', entity: 'x', occurredAt: i.occurredAt, deliveryIds: ['a', 'b'] },
    { eventKey: 'e-2', source: 's', type: 't', entity: 'x', occurredAt: i.occurredAt, deliveryIds: ['b', 'c'] },
  ];
  const batch: RunInput = { ...i, origin: { kind: 'batch', coalescerId: 'c', absorbed } };
  const start = new TypedSearchAttributes(startIndex(batch));
  assert.deepEqual(start.get(WakeAbsorbedEventKeys), ['e-1', 'e-2']);
  assert.deepEqual(start.get(WakeDeliveryIds), ['a', 'b', 'c']);
  assert.equal(start.get(WakeDeliveryCount), 4);
});

test("a coalesced run's deliveries past the ids kept are counted: its record holds the first ids and the newest, whatever the redeliveries", () => {
  const i = input('d-1');
  const event = { eventKey: 'e-1', source: 's', type: 't', entity: 'x', occurredAt: i.occurredAt, deliveryIds: ['first'] };
  const ids = Array.from({ length: 15_000 }, (_, n) => `queue:campaigns:${n}-0`);
  for (const id of ids) addDeliveries(event, [id]);
  addDeliveries(event, ['first', ids.at(-1)!]); // ids it keeps count once
  const other = { eventKey: 'e-2', source: 's', type: 't', entity: 'x', occurredAt: i.occurredAt, deliveryIds: ['other'] };
  const seen = seenAtStart({ ...i, origin: { kind: 'batch', coalescerId: 'c', absorbed: [event, other] } });
  assert.equal(deliveriesOf(event), ids.length + 1);
  assert.deepEqual(event.deliveryIds, ['first', ids[0], ids.at(-1)]);
  assert.equal(event.deliveryIds.length, DELIVERY_IDS_KEPT);
  assert.equal(seen.deliveryCount, ids.length + 2, 'every delivery of both events');
  assert.deepEqual(seen.deliveryIds, ['first', ids[0], ids.at(-1), 'other']);
  // A batch of many events, each delivered once: the run keeps the first ids and the newest, and counts them all.
  const many = ids.slice(0, 2 * RUN_DELIVERY_IDS_KEPT).map((id, n) => ({ ...other, eventKey: `e-${n}`, deliveryIds: [id] }));
  const batch = seenAtStart({ ...i, origin: { kind: 'batch', coalescerId: 'c', absorbed: many } });
  assert.equal(batch.deliveryCount, many.length);
  assert.deepEqual(batch.deliveryIds, [...ids.slice(0, RUN_DELIVERY_IDS_KEPT - 1), ids[many.length - 1]]);
  assert.equal(
    deliveriesText({ deliveryIds: [...batch.deliveryIds], deliveryCount: batch.deliveryCount }, ',', 2),
    `${ids[0]},${ids[1]} +${many.length - 2}`,
    'what the trail table shows',
  );
});

test("a `wakegate shadow` session's run is not indexed: nothing at its start", () => {
  const i = input('d-1');
  assert.deepEqual(startIndex({ ...i, origin: { kind: 'shadow', of: 'x', ofRunId: 'r', absorbed: [], live: false } }), []);
});
