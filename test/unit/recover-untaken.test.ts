import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recoveredOfferId, startedIn, toOfferAgain, untakenFrom, withOwnIds } from '../../activities/coalescer/recover';
import { CoalescerMachine, initialState } from '../../workflows/coalescer/machine';
import type { CoalescerInput, CoalescerState, Offer } from '../../src/core/coalesce-types';
import { adoptSignal, deliverySignal, offerSignal } from '../../src/core/messages';

/**
 * A coalescer execution terminated before any worker took a task of it cannot be queried; the
 * recovery (activities/coalescer/recover.ts) reads what it held from its input and its history's
 * signals. Found by review: the first version kept only the first offer and the offer signals, so a
 * second termination while the workers were behind lost the table an earlier recovery had sent (a
 * redelivery then ran twice) and renamed open skips' offers; and an execution continued as new and
 * terminated before its first task was never recovered.
 */
const policy = { debouncePeriodMs: 1000, maxWaitMs: 5000, idleCloseMs: 60_000, dedupHorizonMs: 60_000, maxEventsPerRun: 100, whileRunning: 'skip' } as const;
const offer = (key: string, offerId?: string): Offer => ({
  event: {
    eventKey: `ev-${key}`,
    source: 'orders',
    type: 'order.paid',
    entity: 'k',
    occurredAt: '2026-12-05T00:00:00Z',
    bucketStart: '2026-12-05T00:00:00Z',
    deliveryIds: [key],
    payload: {},
    fingerprint: 'f',
  },
  ...(offerId ? { offerId } : {}),
});
const table = { seen: [['ev-old', 'f', 'started', '~chain.1'] as unknown as string], except: ['ev-c'] };

test('a new key’s coalescer no worker took: its first offer, then the offers signalled to it, each under its own id; a table sent to it is sent on', () => {
  const input: CoalescerInput = { agent: 'canary', wakeKey: 'k', policy, first: offer('a', 'gate-a') };
  const left = untakenFrom(
    input,
    [
      { name: adoptSignal.name, arg: table },
      { name: offerSignal.name, arg: [offer('c', 'offer-c'), offer('a', 'gate-a-again')] },
      { name: deliverySignal.name, arg: { eventKey: 'ev-old', deliveryIds: ['late'] } },
      { name: 'supersede', arg: {} },
    ],
    'canary#k',
  );
  assert.equal(left.status, undefined, 'no state: nothing was decided but what the history holds');
  assert.deepEqual(left.to, { agent: 'canary', wakeKey: 'k', coalescerId: 'canary#k', policy });
  assert.deepEqual(
    withOwnIds(left.untaken.offers, 'run-1').map((o) => [o.event.eventKey, o.offerId]),
    [
      ['ev-a', 'gate-a'],
      ['ev-c', 'offer-c'],
    ],
    'one offer per event, the first, under its own id (an open skip relayed by an earlier recovery stays itself)',
  );
  assert.deepEqual(left.untaken.adopts, [table], 'the earlier chain’s table goes on to the next');
  assert.deepEqual(left.untaken.deliveries, [{ eventKey: 'ev-old', deliveryIds: ['late'] }]);
});

test('an execution continued as new and terminated before its first task: its carried state is recovered, its `first` is not offered twice', () => {
  const pending = { runKey: 'canary#k@ev-p~chain.2', events: [offer('p').event], openedBy: 'ev-p', openedAtMs: 0, lastAtMs: 0 };
  const state = { seen: [], pending } as unknown as CoalescerState;
  const input: CoalescerInput = { agent: 'canary', wakeKey: 'k', policy, state, first: offer('a', 'gate-a') };
  const left = untakenFrom(input, [{ name: offerSignal.name, arg: [offer('q')] }], 'canary#k');
  assert.deepEqual(left.status, { state, openSkips: [] }, 'every skip is settled before a continue-as-new');
  const offers = withOwnIds([...toOfferAgain(left.status!, false, 'run-2'), ...left.untaken.offers], 'run-2');
  assert.deepEqual(
    offers.map((o) => [o.event.eventKey, o.offerId]),
    [
      ['ev-p', recoveredOfferId('run-2', 'ev-p')],
      ['ev-q', recoveredOfferId('run-2', 'ev-q')],
    ],
    'the pending batch, then the offer signalled to it; the chain’s first offer was decided in an earlier execution',
  );
});

test('two recoveries offering one key again are two offers: the second is a redelivery of the first, its delivery ids joining the held event', () => {
  // Found by the model-based test: under `recovered:<runId>:…` alone, both ids led with the same 8
  // characters, all a dedup entry keeps of an offer id, and the second was answered as a retry of the first.
  const m = new CoalescerMachine({ agent: 'canary', wakeKey: 'k', policy: { ...policy, whileRunning: 'buffer_one' } }, initialState(0, 'c3'));
  const [one, two] = [offer('p'), { ...offer('p'), event: { ...offer('p').event, deliveryIds: ['q'] } }];
  const first = m.offer({ ...one, offerId: recoveredOfferId('run-1', one.event.eventKey) }, 0);
  const second = m.offer({ ...two, offerId: recoveredOfferId('run-2', two.event.eventKey) }, 10);
  assert.deepEqual([first.decision, first.duplicate, second.decision, second.duplicate], ['started', undefined, 'started', true]);
  assert.deepEqual(m.state.pending?.events[0]?.deliveryIds, ['p', 'q']);
  assert.equal(recoveredOfferId('run-1', 'ev-p'), recoveredOfferId('run-1', 'ev-p'), 'a recovery made twice offers each event under the same id');
});

test('a live run found nowhere in Temporal is a phantom only if the terminated execution’s history never shows it started', () => {
  const runKey = 'canary#k@ev-a~c1.1';
  const input: CoalescerInput = { agent: 'canary', wakeKey: 'k', policy };
  assert.equal(startedIn({ input, signals: [], children: [] }, runKey), false, 'its start cut off by the termination: a phantom');
  assert.equal(startedIn({ input, signals: [], children: [runKey] }, runKey), true, 'started there, then re-armed (deleted) by a person');
  const carried = { ...input, state: { running: { runKey } } as unknown as CoalescerState };
  assert.equal(startedIn({ input: carried, signals: [], children: [] }, runKey), true, 'carried in from the execution before, which awaited its start');
  const adopted = [{ name: adoptSignal.name, arg: { ...table, live: { runKey } } }];
  assert.equal(startedIn({ input, signals: adopted, children: [] }, runKey), true, 'given to it live by a recovery');
});
