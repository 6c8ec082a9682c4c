import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { OfferQueue } from '../../src/coalescer/offer-queue';
import type { Offer, OfferAnswer, OfferInput } from '../../src/core/coalesce-types';

/**
 * The queue's back-off after a refused update (another process's updates fill the coalescer's
 * in-flight limit), proven against a stand-in for the client's two calls. An offer whose wait ends
 * during the back-off goes by signal and is settled; when that leaves the batch empty, the retry
 * must send nothing and give its lane slot back, not throw inside its timer (which would take the
 * gate process down: nothing catches an exception thrown by a timer callback).
 */
type Reply = 'answer' | 'hold' | 'refuse' | 'throw' | 'timeout' | 'reset';

function fakeClient(replies: Reply[]) {
  const calls = { updates: [] as string[][], signals: 0 };
  const client = {
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: {
      // The coalescer is open: the first offer's start is refused, and offers go by update.
      start: () => Promise.reject(new WorkflowExecutionAlreadyStartedError('open', 'canary#k', 'coalescerWorkflow')),
      executeUpdateWithStart: (_update: unknown, opts: { args: [Offer[]] }): Promise<OfferAnswer[]> => {
        const ids = opts.args[0].map((o) => o.offerId!);
        calls.updates.push(ids);
        const reply = replies.shift() ?? 'answer';
        if (reply === 'refuse') return Promise.reject(new Error('limit exceeded: too many in-flight updates for this workflow'));
        if (reply === 'throw') throw new Error('the client threw before sending');
        if (reply === 'timeout') return Promise.reject(new WorkflowUpdateRPCTimeoutOrCancelledError('Timeout expired'));
        if (reply === 'hold') return new Promise(() => undefined);
        // What a caller waiting on an accepted update gets when its coalescer is reset by hand
        // (measured on the dev server: tools/probes/reset-reapply.ts); the new run takes the offer again.
        if (reply === 'reset')
          return Promise.reject(
            new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message: 'Workflow completed before the Update completed' })),
          );
        return Promise.resolve(ids.map((id) => ({ decision: 'coalesced' as const, coalescerId: 'c', runKey: `run-of-${id}` })));
      },
      signalWithStart: () => {
        calls.signals += 1;
        return Promise.resolve();
      },
    },
  };
  return { client: client as unknown as Client, calls };
}

const input = (id: string): OfferInput => ({
  agent: 'canary',
  wakeKey: 'k',
  coalescerId: 'canary#k',
  policy: { debouncePeriodMs: 1000, maxWaitMs: 5000, whileRunning: 'skip' } as unknown as OfferInput['policy'],
  offer: {
    offerId: id,
    event: { eventKey: `e/${id}`, deliveryIds: [id], payload: {}, fingerprint: 'f', bucketStart: '2026-12-05T00:00:00Z' } as unknown as Offer['event'],
  },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Errors thrown where nothing catches them (a timer callback, a promise nobody awaits) while `fn` runs and `settleMs` after. */
async function uncaughtDuring(fn: () => Promise<void>, settleMs: number): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onError = (err: unknown) => void seen.push(err);
  // Listening here keeps node:test's own handler from failing the file before the assertion says why.
  const saved = { ue: process.listeners('uncaughtException'), ur: process.listeners('unhandledRejection') };
  process.removeAllListeners('uncaughtException').removeAllListeners('unhandledRejection');
  process.on('uncaughtException', onError).on('unhandledRejection', onError);
  try {
    await fn();
    await sleep(settleMs);
  } finally {
    process.removeListener('uncaughtException', onError).removeListener('unhandledRejection', onError);
    saved.ue.forEach((l) => process.on('uncaughtException', l));
    saved.ur.forEach((l) => process.on('unhandledRejection', l as NodeJS.UnhandledRejectionListener));
  }
  return seen;
}

test('a refused batch whose offers all went by signal during the back-off is not sent again, and nothing throws', async () => {
  const { client, calls } = fakeClient(['refuse', 'hold', 'answer']);
  const queue = new OfferQueue(client, 'q');
  let outcome: string | undefined;
  const uncaught = await uncaughtDuring(async () => {
    // Refused at once; the back-off is at least 25 ms; the offer's 5 ms wait ends first and it goes by signal.
    outcome = (await queue.offer(input('a'), 5)).kind;
  }, 150);
  assert.deepEqual(uncaught, [], `nothing thrown where nobody catches it: ${uncaught.map(String).join('; ')}`);
  assert.equal(outcome, 'accepted');
  assert.equal(calls.signals, 1);
  assert.deepEqual(calls.updates, [['a']], 'the emptied batch was not sent again');
  // The retry gave its slot back: both slots are free, so two offers in two turns go as two updates at once
  // (with a slot kept by the retry, 'c' would wait behind the held 'b').
  const b = queue.offer(input('b'), 300);
  await sleep(0);
  const c = queue.offer(input('c'), 300);
  await sleep(20);
  assert.deepEqual(calls.updates.slice(1), [['b'], ['c']], `both slots free: ${JSON.stringify(calls.updates)}`);
  assert.equal((await c).kind, 'decided');
  assert.equal((await b).kind, 'accepted');
});

test('a client call that throws at once fails its offers and frees its slot, from the drain’s callback too', async () => {
  const { client, calls } = fakeClient(['throw', 'answer']);
  const queue = new OfferQueue(client, 'q');
  let failed: unknown;
  const uncaught = await uncaughtDuring(async () => {
    failed = await queue.offer(input('x'), 1_000).then(
      () => undefined,
      (err: unknown) => err,
    );
  }, 50);
  assert.deepEqual(uncaught, [], `nothing thrown where nobody catches it: ${uncaught.map(String).join('; ')}`);
  assert.match(String(failed), /threw before sending/);
  assert.equal((await queue.offer(input('y'), 1_000)).kind, 'decided');
  assert.deepEqual(calls.updates, [['x'], ['y']]);
});

test('an update that ran out of time sends its waiting offers by signal instead, answered accepted, and frees its slot', async () => {
  const { client, calls } = fakeClient(['timeout', 'answer']);
  const queue = new OfferQueue(client, 'q');
  // A wait far longer than the update's failure: the offer does not go by signal on its own timer.
  const outcome = await queue.offer(input('t'), 60_000);
  assert.deepEqual(outcome, { kind: 'accepted' });
  assert.equal(calls.signals, 1, 'the same offer, by signal: the coalescer answers a repeated offer id once');
  assert.equal((await queue.offer(input('u'), 1_000)).kind, 'decided', 'the slot was freed');
  assert.deepEqual(calls.updates, [['t'], ['u']]);
});

test('an update whose coalescer was reset by hand while it waited is sent again, and answered', async () => {
  const { client, calls } = fakeClient(['reset', 'answer']);
  const queue = new OfferQueue(client, 'q');
  const outcome = await queue.offer(input('r'), 60_000);
  assert.equal(outcome.kind, 'decided', 'not failed: its caller would answer 503 for an offer the coalescer holds');
  assert.deepEqual(calls.updates, [['r'], ['r']], 'the same offer id again: the coalescer answers it with its first decision');
  assert.equal(calls.signals, 0);
});
