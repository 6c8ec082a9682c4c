import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { scheduleGaps } from '../schedules/inspect';
import { eventually, startDevEnv, unique, withWorker, type DevEnv } from './helpers/env';
import { createSchedule, overlapping, resultOf, sleep, testSchedule, ticksOf, wakesOf, windowOf } from './helpers/schedules';

// Schedules need the real dev server (the time-skipping server has none).
let env: DevEnv;
before(async () => {
  env = await startDevEnv();
});
after(async () => {
  await env?.teardown();
});

describe('overlap with a run longer than the interval (dev server)', () => {
  test('skip: never two runs at once, the skipped windows are counted and recorded as gaps', async () => {
    const taskQueue = unique('ov-skip');
    const def = testSchedule({ overlap: 'skip', catchUp: 'latest', spec: { every: '2s' }, payload: { holdMs: 5000 } });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = await createSchedule(env.client, def, taskQueue);
      await sleep(13_000);
      await handle.pause('test over');
      const desc = await handle.describe();
      assert.ok(desc.info.numActionsSkippedOverlap >= 2, `skipped ${desc.info.numActionsSkippedOverlap}`);
      const wakes = await eventually(() => wakesOf(env.client, def.id), (w) => w.length >= 2, 15_000, 'two wakes');
      assert.equal(overlapping(wakes), false, 'two wakes of one schedule were open at once');
      const ticks = await ticksOf(env.client, def.id);
      assert.equal(overlapping(ticks), false, 'two ticks were open at once');
      // The ledger names windows Temporal skipped: none of them ran.
      const ran = new Set(wakes.map(windowOf));
      const { gaps } = await eventually(() => scheduleGaps(env.client, def.id), (g) => g.gaps.length >= 1, 15_000, 'gap records');
      for (const g of gaps) {
        assert.equal(g.reason, 'not_started');
        assert.ok(!ran.has(g.nominal), `gap ${g.nominal} ran`);
      }
      await handle.delete();
    });
  });

  test('buffer_one: at most one start is queued, and runs still never overlap', async () => {
    const taskQueue = unique('ov-buf1');
    const def = testSchedule({ overlap: 'buffer_one', catchUp: 'latest', spec: { every: '1s' }, payload: { holdMs: 3500 } });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = await createSchedule(env.client, def, taskQueue);
      const sizes: number[] = [];
      const until = Date.now() + 11_000;
      while (Date.now() < until) {
        const d = await handle.describe();
        sizes.push(Number(d.raw.info?.bufferSize ?? 0));
        await sleep(250);
      }
      await handle.pause('test over');
      const desc = await handle.describe();
      assert.ok(Math.max(...sizes) === 1, `buffer sizes seen: ${sizes.join(',')}`);
      assert.ok(desc.info.numActionsSkippedOverlap >= 1, 'windows beyond the one buffered are skipped');
      const wakes = await eventually(() => wakesOf(env.client, def.id), (w) => w.length >= 2, 15_000, 'two wakes');
      assert.equal(overlapping(wakes), false);
      await handle.delete();
    });
  });

  test('cancel: the previous run is cancelled and ends `cancelled`', async () => {
    const taskQueue = unique('ov-cancel');
    const def = testSchedule({ overlap: 'cancel', catchUp: 'latest', spec: { every: '3s' }, payload: { holdMs: 60_000 } });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = await createSchedule(env.client, def, taskQueue);
      const wakes = await eventually(
        () => wakesOf(env.client, def.id),
        (w) => w.filter((x) => x.status.name === 'COMPLETED').length >= 1 && w.length >= 2,
        20_000,
        'a second window to cancel the first',
      );
      await handle.pause('test over');
      const closed = wakes.filter((x) => x.status.name === 'COMPLETED');
      for (const w of closed) assert.equal((await resultOf(env.client, w.workflowId)).terminalReason, 'cancelled');
      // The tick that was cancelled says so too.
      const ticks = await ticksOf(env.client, def.id);
      const cancelledTicks = ticks.filter((t) => t.status.name !== 'RUNNING');
      assert.ok(cancelledTicks.length >= 1);
      assert.equal(overlapping(wakes), false, 'the new run starts only after the old one has ended');
      // Cancel the one still holding so the worker can stop.
      for (const w of wakes.filter((x) => x.status.name === 'RUNNING')) await env.client.workflow.getHandle(w.workflowId).cancel();
      await handle.delete();
    });
  });

  test('a window fired twice (two backfills over the same range) runs once', async () => {
    const taskQueue = unique('ov-twice');
    const def = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '1h' }, payload: {} });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = await createSchedule(env.client, def, taskQueue);
      const range = { start: new Date('2026-01-01T00:00:00Z'), end: new Date('2026-01-01T02:00:00Z') };
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const done = (n: number) => (t: Awaited<ReturnType<typeof ticksOf>>) => t.length >= n && t.every((x) => x.status.name !== 'RUNNING');
      const first = await eventually(() => ticksOf(env.client, def.id), done(3), 30_000, 'the first backfill');
      assert.equal(first.length, 3, 'windows 00:00, 01:00 and 02:00');
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const ticks = await eventually(() => ticksOf(env.client, def.id), done(6), 30_000, 'the second backfill');
      assert.equal(ticks.length, 6, 'each window was fired twice');
      const wakes = await wakesOf(env.client, def.id);
      assert.deepEqual(wakes.map(windowOf).sort(), ['2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z']);
      const decisions = await Promise.all(
        ticks.map(async (t) => ((await env.client.workflow.getHandle(t.workflowId, t.runId).result()) as { run: { decision: string } }).run.decision),
      );
      assert.deepEqual(decisions.sort(), ['completed', 'completed', 'completed', 'started', 'started', 'started']);
      await handle.delete();
    });
  });
});
