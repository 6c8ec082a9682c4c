import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useDevEnv, unique, withWorker, eventually } from '../helpers/env';
import { runCli } from '../helpers/cli';
import { ticksOf } from '../helpers/schedules';
import { exampleApp } from '../helpers/app';

const env = useDevEnv();

const ID = 'canary-heartbeat'; // from schedules/definitions.ts

describe('wakegate schedules, run as a subprocess', () => {
  test('sync, a pause from outside (as the Web UI does), list, trigger, backfill and gaps', async () => {
    const taskQueue = unique('sched-cli');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await runCli(['schedules', 'sync'], cliEnv);
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(
        first.json.created,
        exampleApp.schedules.map((d) => d.id),
      );
      const second = await runCli(['schedules', 'sync'], cliEnv);
      assert.deepEqual(second.json.created, []);
      assert.deepEqual(second.json.updated, []);
      assert.deepEqual(
        second.json.unchanged,
        exampleApp.schedules.map((d) => d.id),
      );

      // The Web UI's pause is the same API call as the Temporal CLI's toggle.
      await env.server.cli(['schedule', 'toggle', '--schedule-id', ID, '--pause', '--reason', 'paused in the web ui']);
      const afterPause = await runCli(['schedules', 'sync'], cliEnv);
      assert.deepEqual(afterPause.json.paused, [{ id: ID, note: 'paused in the web ui' }]);
      const list = await runCli(['schedules', 'list'], cliEnv);
      const rows = list.json.schedules as Record<string, unknown>[];
      assert.deepEqual(
        rows.map((s) => [s.id, s.agent]),
        exampleApp.schedules.map((d) => [d.id, d.agent]),
        'each schedule names the agent it wakes',
      );
      const row = rows.find((s) => s.id === ID)!;
      assert.equal(row.agent, 'canary');
      assert.equal(row.paused, true);
      assert.equal(row.note, 'paused in the web ui');
      assert.equal((row.policy as { catchUp: string }).catchUp, 'latest');
      // Temporal still lists the spec's next times while paused; they are on the 5-minute grid.
      assert.ok((row.nextRuns as string[]).length >= 1);
      for (const t of row.nextRuns as string[]) assert.equal(Date.parse(t) % 300_000, 0, t);
      assert.equal((row.counts as { buffered: number }).buffered, 0);

      const trig = await runCli(['schedules', 'trigger', ID], cliEnv);
      assert.equal(trig.code, 0, trig.stderr);
      assert.equal(trig.json.overlap, 'skip', "the schedule's own overlap, not the SDK's ALLOW_ALL");
      await eventually(
        () => ticksOf(env.client, ID),
        (t) => t.length >= 1 && t.every((x) => x.status.name !== 'RUNNING'),
        20_000,
        'the triggered tick',
      );

      const bad = await runCli(['schedules', 'trigger', ID, '--overlap', 'sometimes'], cliEnv);
      assert.equal(bad.code, 2);
      assert.match(String((bad.json.error as { message: string }).message), /--overlap: unknown overlap "sometimes"/);

      // catchUp latest: backfilled windows are folded into the newest due window, and say so in the gaps.
      const back = await runCli(['schedules', 'backfill', ID, '--start', '2026-01-01T00:00:00Z', '--end', '2026-01-01T00:10:00Z'], cliEnv);
      assert.equal(back.code, 0, back.stderr);
      assert.equal(back.json.overlap, 'skip');
      const gaps = await eventually(
        async () => (await runCli(['schedules', 'gaps', ID], cliEnv)).json,
        (g) => (g.gaps as unknown[]).length >= 1,
        20_000,
        'gap records of the backfill',
      );
      const records = gaps.gaps as { nominal: string; reason: string; into?: string }[];
      assert.ok(
        records.every((g) => g.reason === 'coalesced' && g.into! > '2026-01-01T00:10:00Z'),
        JSON.stringify(records),
      );
      assert.equal(gaps.scheduleId, ID);
    });
  });
});
