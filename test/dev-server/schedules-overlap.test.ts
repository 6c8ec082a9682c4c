import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { scheduleGaps } from '../../schedules/inspect';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { toScheduleOptions } from '../../schedules/to-temporal';
import { Gate } from '../../src/gate/gate';
import { failingCanary } from '../helpers/agents';
import { runCli } from '../helpers/cli';
import { createSchedule, overlapping, ranOf, resultOf, sleep, testSchedule, ticksOf, wakesOf, windowOf } from '../helpers/schedules';
import { registryOf, activitiesOf } from '../helpers/app';
import { exampleApp } from '../helpers/app';

// Schedules need the real dev server (the time-skipping server has none).
const env = useDevEnv();

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
      const wakes = await eventually(
        () => wakesOf(env.client, def.id),
        (w) => w.length >= 2,
        15_000,
        'two wakes',
      );
      assert.equal(overlapping(wakes), false, 'two wakes of one schedule were open at once');
      const ticks = await ticksOf(env.client, def.id);
      assert.equal(overlapping(ticks), false, 'two ticks were open at once');
      // The ledger names windows Temporal skipped: none of them ran.
      const ran = new Set(wakes.map(windowOf));
      const { gaps } = await eventually(
        () => scheduleGaps(env.client, def.id),
        (g) => g.gaps.length >= 1,
        15_000,
        'gap records',
      );
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
      // A late buffered window (catchUp latest) folds into the newest due one and waits for its run:
      // the runs that ran the agent never overlap.
      const wakes = await eventually(
        () => wakesOf(env.client, def.id),
        (w) => w.length >= 2 && w.every((x) => x.status.name !== 'RUNNING'),
        15_000,
        'two closed wakes',
      );
      assert.ok(ranOf(wakes).length >= 2, `ran ${ranOf(wakes).length}`);
      assert.equal(overlapping(ranOf(wakes)), false);
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
      // The Schedule starts each window's run itself (a one-call agent): these are the runs.
      const done = (n: number) => (t: Awaited<ReturnType<typeof ticksOf>>) => t.length >= n && t.every((x) => x.status.name !== 'RUNNING');
      const first = await eventually(() => ticksOf(env.client, def.id), done(3), 30_000, 'the first backfill');
      assert.equal(first.length, 3, 'windows 00:00, 01:00 and 02:00');
      for (const r of first) assert.equal((await resultOf(env.client, r.workflowId)).terminalReason, 'success');
      // Temporal starts a backfill over a completed run of the same ID (ALLOW_DUPLICATE): the run answers it.
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const fired = await eventually(() => ticksOf(env.client, def.id), done(6), 30_000, 'the second backfill');
      assert.equal(fired.length, 6, 'each window was fired twice');
      const wakes = await eventually(
        () => wakesOf(env.client, def.id),
        (w) => w.length === 6 && w.every((x) => x.status.name === 'COMPLETED'),
        15_000,
        'six closed runs',
      );
      assert.deepEqual(ranOf(wakes).map(windowOf).sort(), ['2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z']);
      const second = wakes.filter((w) => !first.some((f) => f.runId === w.runId));
      assert.equal(second.length, 3);
      for (const w of second) {
        const result = await env.client.workflow.getHandle(w.workflowId, w.runId).result();
        assert.equal(result.terminalReason, 'duplicate', result.summary);
        assert.equal((result.output as { takenBy: { workflowId: string; runId: string } }).takenBy.workflowId, w.workflowId);
        assert.ok(
          first.some((f) => f.runId === (result.output as { takenBy: { runId: string } }).takenBy.runId),
          'taken by the first run of that window',
        );
        // Nothing of the agent ran: no model or tool spend, no attempt beyond the first.
        assert.equal(result.usage, undefined);
      }

      // The same window emitted through the gate (a CLI call, a producer) names the same run: answered from it.
      const gate = new Gate({ client: env.client, taskQueue, registry: registryOf() });
      const tick = (occurredAt: string, deliveryId: string) => ({ source: 'schedule', entity: def.id, type: 'tick', occurredAt, payload: {}, deliveryId });
      const emitted = await gate.admit(tick('2026-01-01T01:00:00Z', 'cli-1'), { agent: 'canary' });
      assert.equal(emitted.decision, 'completed');
      assert.equal(emitted.runKey, first.find((f) => windowOf(f) === '2026-01-01T01:00:00Z')!.workflowId);
      // And a window emitted first, then fired by the Schedule: the Schedule's run finds it taken.
      const early = await gate.admit(tick('2026-01-01T03:00:00Z', 'cli-2'), { agent: 'canary' });
      assert.equal(early.decision, 'started');
      await env.client.workflow.getHandle(early.runKey).result();
      await handle.backfill({
        start: new Date('2026-01-01T03:00:00Z'),
        end: new Date('2026-01-01T03:00:00Z'),
        overlap: (await handle.describe()).policies.overlap,
      });
      const isThree = (x: WorkflowExecutionInfo) => windowOf(x) === '2026-01-01T03:00:00Z' && x.status.name !== 'RUNNING';
      const three = (
        await eventually(
          () => ticksOf(env.client, def.id),
          (t) => t.some(isThree),
          30_000,
          'the window fired after it was emitted',
        )
      ).find(isThree)!;
      const late = await env.client.workflow.getHandle(three.workflowId, three.runId).result();
      assert.equal(three.workflowId, early.runKey, 'one ID for the window, whoever starts it');
      assert.equal(late.terminalReason, 'duplicate', late.summary);
      await handle.delete();
    });
  });

  test('a window whose run failed runs again when it is fired again; one that ran does not', async () => {
    const taskQueue = unique('ov-failed');
    const def = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '1h' }, payload: {}, pauseOnFailure: false });
    const range = { start: new Date('2026-03-01T00:00:00Z'), end: new Date('2026-03-01T00:00:00Z') };
    const closed = (n: number) => (t: Awaited<ReturnType<typeof ticksOf>>) => t.length >= n && t.every((x) => x.status.name !== 'RUNNING');
    // The canary's recorder is down: the window's run fails.
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const handle = await createSchedule(env.client, def, taskQueue);
        await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
        const [failed] = await eventually(() => ticksOf(env.client, def.id), closed(1), 30_000, 'the failing run');
        assert.equal(failed!.status.name, 'FAILED');
      },
      { activities: activitiesOf({ agents: failingCanary() }) },
    );
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = env.client.schedule.getHandle(def.id);
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const runs = await eventually(() => ticksOf(env.client, def.id), closed(2), 30_000, 'the window fired again');
      const again = runs.find((r) => r.status.name !== 'FAILED')!;
      assert.equal(
        (await env.client.workflow.getHandle(again.workflowId, again.runId).result()).terminalReason,
        'success',
        'the failed run left the window free',
      );
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const third = (await eventually(() => ticksOf(env.client, def.id), closed(3), 30_000, 'the window fired a third time')).find(
        (r) => !runs.some((x) => x.runId === r.runId),
      )!;
      const answer = await env.client.workflow.getHandle(third.workflowId, third.runId).result();
      assert.equal(answer.terminalReason, 'duplicate');
      assert.equal((answer.output as { takenBy: { runId: string } }).takenBy.runId, again.runId);
      await handle.delete();
    });
  });

  test('a window fired again with another payload is refused (mismatch) and pauses the schedule', async () => {
    const taskQueue = unique('ov-mismatch');
    const def = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '1h' }, payload: { note: 'first' }, pauseOnFailure: true });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const handle = await createSchedule(env.client, def, taskQueue);
      const range = { start: new Date('2026-02-01T00:00:00Z'), end: new Date('2026-02-01T00:00:00Z') };
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const done = (n: number) => (t: Awaited<ReturnType<typeof ticksOf>>) => t.length >= n && t.every((x) => x.status.name !== 'RUNNING');
      await eventually(() => ticksOf(env.client, def.id), done(1), 30_000, 'the first run');
      await handle.update((prev) => ({ ...prev, action: toScheduleOptions({ ...def, payload: { note: 'second' } }, taskQueue, exampleApp.registry).action }));
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const runs = await eventually(() => ticksOf(env.client, def.id), done(2), 30_000, 'the second run');
      const failed = runs.find((r) => r.status.name === 'FAILED');
      assert.ok(failed, `statuses: ${runs.map((r) => r.status.name).join(', ')}`);
      await assert.rejects(env.client.workflow.getHandle(failed.workflowId, failed.runId).result(), (err: Error & { cause?: Error }) =>
        /already ran as .* with another payload/.test(String(err.cause?.message)),
      );
      assert.equal(
        (
          await eventually(
            () => handle.describe(),
            (d) => d.state.paused,
            15_000,
            'paused on failure',
          )
        ).state.paused,
        true,
      );
      // The person's way to run the window with the new payload: re-arm it (every closed run of its ID goes), fire it again.
      const rearm = await runCli(['rearm', failed.workflowId], { TEMPORAL_ADDRESS: env.server.address });
      assert.equal(rearm.code, 0, rearm.stderr);
      assert.equal((rearm.json.earlierRunsDeleted as string[]).length, 1, 'the run that took the window goes too');
      await handle.backfill({ ...range, overlap: (await handle.describe()).policies.overlap });
      const rerun = await eventually(
        () => ticksOf(env.client, def.id),
        (t) => t.length === 1 && t[0]!.status.name !== 'RUNNING',
        30_000,
        'the re-armed window run',
      );
      const fresh = await env.client.workflow.getHandle(rerun[0]!.workflowId, rerun[0]!.runId).result();
      assert.equal(fresh.terminalReason, 'success', fresh.summary);
      await handle.delete();
    });
  });
});
