import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TypedSearchAttributes } from '@temporalio/common';
import { carriesIndex, runIndex, seenAtStart, startIndex } from '../../src/core/run-index';
import { WakeAbsorbedEventKeys, WakeDeliveryCount, WakeDeliveryIds, WakeEventKey, WakeHeld } from '../../src/core/search-attributes';
import type { RunInput } from '../../src/core/run-types';
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

test("a `wakegate shadow` session's run is not indexed: nothing at its start", () => {
  const i = input('d-1');
  assert.deepEqual(startIndex({ ...i, origin: { kind: 'shadow', of: 'x', ofRunId: 'r', absorbed: [], live: false } }), []);
});
