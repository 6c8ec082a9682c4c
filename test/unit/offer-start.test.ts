import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { OfferQueue } from '../../src/coalescer/offer-queue';
import { offerStats } from '../../tools/bench/offer-stats';
import type { CoalescerInput, Offer, OfferAnswer, OfferInput } from '../../src/core/coalesce-types';
import { chainOf } from '../../src/core/ids';
import { decideFirst } from '../../src/core/coalesce-batch';
import { loadConfig } from '../../src/config/config';

/**
 * A wake key's first event at the cost of a start (src/coalescer/coalescer-start.ts): with no coalescer open,
 * the gate starts one with the offer in its input and answers from the start alone; the offers that
 * arrive meanwhile wait for it and go by update; a refused start (one is open) goes by update, and so
 * does every later offer to that coalescer. Against a stand-in for the client's calls.
 */
type StartReply = 'start' | 'open' | 'down';
const RUN_ID = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

function fakeClient(starts: StartReply[], holdStartMs = 0, backlog = 0) {
  const calls = { starts: [] as { id: string; args: CoalescerInput[]; conflict: string }[], updates: [] as string[][], signals: 0, described: 0 };
  const client = {
    options: { namespace: 'default' },
    workflowService: {
      describeTaskQueue: (req: { taskQueueType: number; reportStats: boolean }) => {
        calls.described += 1;
        assert.ok(req.reportStats);
        return Promise.resolve({ stats: { approximateBacklogCount: backlog } });
      },
    },
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: {
      start: async (_type: string, opts: { workflowId: string; args: CoalescerInput[]; workflowIdConflictPolicy: string }) => {
        calls.starts.push({ id: opts.workflowId, args: opts.args, conflict: opts.workflowIdConflictPolicy });
        await new Promise((r) => setTimeout(r, holdStartMs));
        const reply = starts.shift() ?? 'open';
        if (reply === 'open') throw new WorkflowExecutionAlreadyStartedError('open', opts.workflowId, 'coalescerWorkflow');
        if (reply === 'down') throw new Error('14 UNAVAILABLE: connection refused');
        return { workflowId: opts.workflowId, firstExecutionRunId: RUN_ID };
      },
      executeUpdateWithStart: (_update: unknown, opts: { args: [Offer[]] }): Promise<OfferAnswer[]> => {
        const ids = opts.args[0].map((o) => o.offerId!);
        calls.updates.push(ids);
        return Promise.resolve(ids.map((id) => ({ decision: 'coalesced' as const, coalescerId: 'canary#k', runKey: `run-of-${id}` })));
      },
      signalWithStart: () => {
        calls.signals += 1;
        return Promise.resolve();
      },
    },
  };
  return { client: client as unknown as Client, calls };
}

const policy = { debouncePeriodMs: 1000, maxWaitMs: 5000, idleCloseMs: 60_000, dedupHorizonMs: 60_000, maxEventsPerRun: 100, whileRunning: 'skip' } as const;
const input = (id: string, key = 'k'): OfferInput => ({
  agent: 'canary',
  wakeKey: key,
  coalescerId: `canary#${key}`,
  policy,
  offer: {
    offerId: id,
    event: {
      eventKey: `e/${id}`,
      source: 'orders',
      type: 'order.paid',
      entity: key,
      occurredAt: '2026-12-05T00:00:00Z',
      bucketStart: '2026-12-05T00:00:00Z',
      deliveryIds: [id],
      payload: {},
      fingerprint: 'f',
    },
  },
});

test('a new key: one start carries the offer, answered with the decision the new chain makes first, no update', async () => {
  const { client, calls } = fakeClient(['start']);
  const queue = new OfferQueue(client, 'q');
  const a = input('a');
  const outcome = await queue.offer(a, 5000);
  assert.equal(calls.starts.length, 1);
  assert.deepEqual(calls.starts[0]!.args[0]!.first, a.offer, 'the offer is in the input');
  assert.equal(calls.starts[0]!.conflict, 'FAIL', 'a start never joins an open coalescer');
  assert.deepEqual(calls.updates, []);
  const expected = decideFirst({ agent: 'canary', wakeKey: 'k', policy }, a.offer, chainOf(RUN_ID));
  assert.deepEqual(outcome, { kind: 'decided', answer: expected });
  assert.equal(expected.decision, 'started');
  assert.equal(expected.runKey, `canary#k@e/a~${chainOf(RUN_ID)}.1`);
  assert.equal(expected.startsInMs, 1000, 'its batch starts after the debounce');
});

test('offers to the key while its start is in flight wait for it, then go together in one update', async () => {
  const { client, calls } = fakeClient(['start'], 50);
  const queue = new OfferQueue(client, 'q');
  const outcomes = await Promise.all(['a', 'b', 'c'].map((id) => queue.offer(input(id), 5000)));
  const decisions = outcomes.map((o) => (o.kind === 'decided' ? o.answer.decision : o.kind));
  assert.equal(calls.starts.length, 1, 'one start');
  assert.deepEqual(calls.updates, [['b', 'c']], 'the rest in one update after it');
  assert.deepEqual(decisions, ['started', 'coalesced', 'coalesced']);
});

test('a refused start (a coalescer is open) goes by update, and later offers to it try no start', async () => {
  const { client, calls } = fakeClient(['open']);
  const queue = new OfferQueue(client, 'q');
  const first = await queue.offer(input('a'), 5000);
  assert.equal(first.kind === 'decided' && first.answer.runKey, 'run-of-a');
  await queue.offer(input('b'), 5000);
  assert.equal(calls.starts.length, 1, 'no second start for a coalescer seen open');
  assert.deepEqual(calls.updates, [['a'], ['b']]);
  // Another key is new to this process: its first offer tries a start.
  await queue.offer(input('c', 'other'), 5000);
  assert.equal(calls.starts.length, 2);
});

test('a start Temporal did not take fails the offer (its caller answers 503), and the next offer tries a start again', async () => {
  const { client, calls } = fakeClient(['down', 'start']);
  const queue = new OfferQueue(client, 'q');
  await assert.rejects(queue.offer(input('a'), 5000), /UNAVAILABLE/);
  assert.deepEqual(calls.updates, []);
  const again = await queue.offer(input('a'), 5000);
  assert.equal(calls.starts.length, 2);
  assert.equal(again.kind === 'decided' && again.answer.decision, 'started');
});

test('workers far behind: a new key goes by update, at their pace, once the backlog read says so; under the bound, by start', async () => {
  const { client, calls } = fakeClient(['start', 'start'], 0, 5000);
  const queue = new OfferQueue(client, 'q', { startBacklog: 1000 });
  // The first look is not waited for: this offer takes the start.
  assert.equal((await queue.offer(input('a', 'k1'), 5000)).kind, 'decided');
  assert.equal(calls.starts.length, 1);
  assert.equal(calls.described, 1);
  const before = offerStats.startsDeferred;
  await queue.offer(input('b', 'k2'), 5000);
  assert.equal(calls.starts.length, 1, 'no start while 5,000 workflow tasks wait');
  assert.deepEqual(calls.updates, [['b']]);
  assert.equal(offerStats.startsDeferred, before + 1);
  assert.equal(calls.described, 1, 'read at most once a second');

  const under = fakeClient(['start', 'start'], 0, 10);
  const quick = new OfferQueue(under.client, 'q', { startBacklog: 1000 });
  await quick.offer(input('a', 'k1'), 5000);
  await new Promise((r) => setImmediate(r));
  await quick.offer(input('b', 'k2'), 5000);
  assert.equal(under.calls.starts.length, 2, 'a short queue: both by start');
});

test('a refused start: its offer goes first, in one update with those that queued behind it, in the order made', async () => {
  const { client, calls } = fakeClient(['open'], 50);
  const queue = new OfferQueue(client, 'q');
  const outcomes = await Promise.all(['a', 'b', 'c'].map((id) => queue.offer(input(id), 5000)));
  assert.equal(calls.starts.length, 1);
  assert.deepEqual(calls.updates, [['a', 'b', 'c']], 'the refused start’s offer ahead of the rest');
  assert.deepEqual(
    outcomes.map((o) => (o.kind === 'decided' ? o.answer.runKey : o.kind)),
    ['run-of-a', 'run-of-b', 'run-of-c'],
  );
});

test('WAKEGATE_START_BACKLOG sets the bound for the deployment’s gates; a bad value names the setting', () => {
  assert.equal(loadConfig({}).startBacklog, undefined, 'unset: the gate’s default');
  assert.equal(loadConfig({ WAKEGATE_START_BACKLOG: '300' }).startBacklog, 300);
  assert.throws(() => loadConfig({ WAKEGATE_START_BACKLOG: '-1' }), /WAKEGATE_START_BACKLOG/);
});
