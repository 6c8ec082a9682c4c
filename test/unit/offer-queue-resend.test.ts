import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { OfferQueue, type OfferOutcome } from '../../src/coalescer/offer-queue';
import { offerStats } from '../../tools/bench/offer-stats';
import type { Offer, OfferAnswer, OfferInput } from '../../src/core/coalesce-types';

/**
 * The queue's answer to an update the server holds (as it can at a coalescer's continue-as-new),
 * proven against a stand-in for the client's two calls: `executeUpdateWithStart` answers, holds
 * (never settles) or answers late as each test says, and `signalWithStart` takes the fallback.
 */
type Reply = 'answer' | 'hold' | { lateMs: number };

function fakeClient(replies: Reply[]) {
  const calls = { updates: [] as string[][], signals: 0 };
  const late: (() => void)[] = [];
  const client = {
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: {
      // The coalescer is open: the first offer's start is refused, and offers go by update.
      start: () => Promise.reject(new WorkflowExecutionAlreadyStartedError('open', 'canary#k', 'coalescerWorkflow')),
      executeUpdateWithStart: (_update: unknown, opts: { args: [Offer[]] }): Promise<OfferAnswer[]> => {
        const ids = opts.args[0].map((o) => o.offerId!);
        calls.updates.push(ids);
        const reply = replies.shift() ?? 'answer';
        const answers = ids.map((id) => ({ decision: 'coalesced' as const, coalescerId: 'c', runKey: `run-of-${id}` }));
        if (reply === 'answer') return Promise.resolve(answers);
        if (reply === 'hold') return new Promise(() => undefined);
        return new Promise((resolve) => late.push(() => setTimeout(() => resolve(answers), reply.lateMs)));
      },
      signalWithStart: () => {
        calls.signals += 1;
        return Promise.resolve();
      },
    },
  };
  return { client: client as unknown as Client, calls, releaseLate: () => late.splice(0).forEach((f) => f()) };
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

test('an update held past 750 ms is sent again with its offers, and they get the coalescer’s answer', async () => {
  const { client, calls } = fakeClient(['answer', 'hold', 'answer']);
  const queue = new OfferQueue(client, 'q');
  const before = offerStats.stuckResends;
  // The coalescer has answered this process (it is live) ...
  assert.equal(((await queue.offer(input('a'), 10_000)) as { kind: string }).kind, 'decided');
  // ... then an update is held by the server.
  const t0 = Date.now();
  const held = (await queue.offer(input('b'), 10_000)) as Extract<OfferOutcome, { kind: 'decided' }>;
  const waited = Date.now() - t0;
  assert.equal(held.kind, 'decided');
  assert.equal(held.answer.runKey, 'run-of-b');
  assert.deepEqual(calls.updates, [['a'], ['b'], ['b']], 'the held batch went again as a new update');
  // Bounded by the offer's wait (10 s), not by a timing: a loaded machine may run the resend late.
  assert.ok(waited >= 700 && waited < 10_000, `answered after the resend, ${waited} ms`);
  assert.equal(offerStats.stuckResends - before, 1);
  assert.equal(calls.signals, 0, 'no fallback signal: the resend answered');
});

test('the resend takes the held update’s slot: offers behind it go on, each batch sent once and resent once', async () => {
  const { client, calls, releaseLate } = fakeClient(['answer', { lateMs: 0 }, 'hold', 'answer', 'answer']);
  const queue = new OfferQueue(client, 'q');
  await queue.offer(input('a'), 10_000);
  // Two updates in flight (the lane's two slots): 'b' answers late, 'c' is held.
  const b = queue.offer(input('b'), 10_000);
  await sleep(0);
  const c = queue.offer(input('c'), 10_000);
  await sleep(0);
  // 'd' waits for a slot; both are held past 750 ms and resent ...
  const d = queue.offer(input('d'), 10_000);
  const answers = await Promise.all([b, c, d]);
  assert.ok(answers.every((o) => o.kind === 'decided'));
  // ... then the late answer to 'b' comes, after its resend answered.
  releaseLate();
  await sleep(50);
  const sent = calls.updates.flat();
  assert.equal(sent.filter((id) => id === 'b').length, 2, `b resent once: ${JSON.stringify(calls.updates)}`);
  assert.equal(sent.filter((id) => id === 'c').length, 2, `c resent once: ${JSON.stringify(calls.updates)}`);
  assert.equal(sent.filter((id) => id === 'd').length, 1, 'd went once, in a slot a resend had not taken twice');
  // The lane is idle again: one more offer goes at once, in one update.
  const n = calls.updates.length;
  assert.equal((await queue.offer(input('e'), 10_000)).kind, 'decided');
  assert.equal(calls.updates.length, n + 1);
});

test('a coalescer that has not answered this process is not resent to: the offer goes by signal after its wait', async () => {
  const { client, calls } = fakeClient(['hold', 'hold', 'hold']);
  const queue = new OfferQueue(client, 'q');
  const before = offerStats.stuckResends;
  const outcome = await queue.offer(input('x'), 1_200);
  assert.equal(outcome.kind, 'accepted');
  assert.equal(calls.signals, 1);
  assert.deepEqual(calls.updates, [['x']], 'no resend to a coalescer not known to be live');
  assert.equal(offerStats.stuckResends, before);
});

test('at most two resends of one batch; then the offer waits for its signal', async () => {
  const { client, calls } = fakeClient(['answer', 'hold', 'hold', 'hold', 'hold']);
  const queue = new OfferQueue(client, 'q');
  await queue.offer(input('a'), 10_000);
  // Its wait leaves room for both resends (at 750 ms each) on a loaded machine.
  const outcome = await queue.offer(input('y'), 6_000);
  assert.equal(outcome.kind, 'accepted');
  assert.deepEqual(calls.updates, [['a'], ['y'], ['y'], ['y']], 'sent once and resent twice');
  assert.equal(calls.signals, 1);
});

test('a held update’s late answer, after its resend answered, frees no second slot', async () => {
  // k is held throughout (its lane stays open); b is held, resent and answered, then its first send answers late.
  const { client, calls, releaseLate } = fakeClient(['answer', 'hold', { lateMs: 0 }, 'hold', 'answer', 'hold', 'hold', 'hold']);
  const queue = new OfferQueue(client, 'q');
  await queue.offer(input('a'), 10_000);
  // k waits long enough to stay held through the checks below, even on a loaded machine.
  const k = queue.offer(input('k'), 6_000);
  await sleep(0);
  const b = await queue.offer(input('b'), 10_000);
  assert.equal(b.kind, 'decided');
  assert.deepEqual(calls.updates, [['a'], ['k'], ['b'], ['k'], ['b']], 'k and b resent; the resend of b answered');
  releaseLate();
  await sleep(20);
  // One slot is k's; the other is free. x takes it, y waits: a late answer that freed a slot too would let y go.
  const x = queue.offer(input('x'), 1_000);
  await sleep(0);
  const y = queue.offer(input('y'), 1_000);
  await sleep(100);
  assert.deepEqual(calls.updates.slice(5), [['x']], `y queued behind k and x: ${JSON.stringify(calls.updates)}`);
  await Promise.all([k, x, y]);
});
