import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { scheduleGaps } from '../../schedules/inspect';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { createSchedule, ranOf, sleep, testSchedule, wakesOf, windowOf } from '../helpers/schedules';

// Real downtime: the dev server process is stopped and restarted on the same SQLite file.
const env = useDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-catchup-')), 'dev.db') });

const EVERY_MS = 2000;
const grid = (fromMs: number, toMs: number) => {
  const out: string[] = [];
  for (let t = Math.ceil(fromMs / EVERY_MS) * EVERY_MS; t < toMs; t += EVERY_MS) out.push(new Date(t).toISOString().replace('.000Z', 'Z'));
  return out;
};

describe('catch-up after real downtime (dev server stopped and restarted)', () => {
  test('all runs every missed window once, latest runs exactly one, skip runs none and records each gap', async () => {
    const taskQueue = unique('catchup');
    const all = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '2s' } });
    const latest = testSchedule({ overlap: 'skip', catchUp: 'latest', spec: { every: '2s' } });
    const skip = testSchedule({ overlap: 'skip', catchUp: 'skip', spec: { every: '2s' }, lateAfter: '1s' });
    await withWorker(env.nativeConnection, taskQueue, async () => {
      for (const d of [all, latest, skip]) await createSchedule(env.client, d, taskQueue);
      await sleep(5000);
    });
    await env.server.stop();
    // Measured once the process is gone: a window due before that may have been fired and decided.
    const downFrom = Date.now();
    await sleep(14_000);
    const upAt = Date.now();
    await env.server.up();
    await env.reconnect();
    const missed = grid(downFrom, upAt); // windows due while nothing could fire them
    assert.ok(missed.length >= 6, `missed windows: ${missed.length}`);
    await withWorker(env.nativeConnection, taskQueue, async () => {
      await sleep(9000);
      for (const d of [all, latest, skip]) await env.client.schedule.getHandle(d.id).pause('test over');

      // The runs that ran their window (closed: a run declined by its catch-up policy says so when it ends).
      const ran = async (id: string) =>
        ranOf(
          await eventually(
            () => wakesOf(env.client, id),
            (w) => w.length > 0 && w.every((x) => x.status.name !== 'RUNNING'),
            20_000,
            `the runs of ${id} closed`,
          ),
        );
      const allWakes = await eventually(
        () => ran(all.id),
        (w) => missed.every((m) => w.some((x) => windowOf(x) === m)),
        20_000,
        'a wake for every missed window of `all`',
      );
      const allWindows = allWakes.map(windowOf);
      assert.equal(new Set(allWindows).size, allWindows.length, 'each window ran once');

      const latestWakes = await ran(latest.id);
      const latestLedger = await scheduleGaps(env.client, latest.id);
      // The catch-up run: the first run after the restart for a window from the downtime on. Temporal
      // starts one missed window (overlap skip drops the rest), which folds into the newest due one and runs it.
      const catchUp = latestWakes
        .filter((w) => w.startTime.getTime() >= upAt && windowOf(w) >= missed[0]!)
        .sort((a, b) => a.startTime.getTime() - b.startTime.getTime())[0];
      assert.ok(catchUp, 'latest ran after the restart');
      const catchUpWindow = windowOf(catchUp);
      assert.ok(catchUpWindow >= missed[missed.length - 1]!, `latest ran ${catchUpWindow}, not the newest window`);
      // Exactly one run from the first missed window up to and including the catch-up window.
      const caughtUp = latestWakes.map(windowOf).filter((w) => w >= missed[0]! && w <= catchUpWindow);
      assert.deepEqual(caughtUp, [catchUpWindow], `latest ran ${caughtUp.join(', ')}`);
      const latestCovered = new Set([...latestLedger.gaps.map((g) => g.nominal), ...latestWakes.map(windowOf)]);
      for (const m of missed) assert.ok(latestCovered.has(m), `window ${m} of latest neither ran nor left a record`);

      const skipWakes = await ran(skip.id);
      const skipRan = new Set(skipWakes.map(windowOf));
      for (const m of missed) assert.ok(!skipRan.has(m), `skip ran missed window ${m}`);
      const skipLedger = await eventually(
        () => scheduleGaps(env.client, skip.id),
        (l) => missed.every((m) => l.gaps.some((g) => g.nominal === m)),
        15_000,
        'a gap record for every missed window of `skip`',
      );
      assert.ok(skipLedger.gaps.every((g) => g.reason === 'not_started' || g.reason === 'late_skipped'));
      const skipDesc = await env.client.schedule.getHandle(skip.id).describe();
      assert.ok(skipDesc.info.numActionsMissedCatchupWindow >= 1, 'Temporal counted windows older than its 10 s catch-up window');
      assert.ok(
        skipWakes.some((w) => windowOf(w) > missed[missed.length - 1]!),
        'skip resumed on time after the restart',
      );
    });
  });
});
