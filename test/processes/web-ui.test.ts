import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import type { RunResult } from '../../src/core/run-types';
import { runCli } from '../helpers/cli';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside } from '../helpers/outside';
import { ticksOf } from '../helpers/schedules';
import { chromiumPath, launch, step } from '../helpers/browser';

/**
 * The Temporal Web UI, driven in a real browser (Debian's chromium through playwright-core; nothing
 * is downloaded): a person pauses a wakegate schedule and triggers it from the UI's own pages, and
 * the CLI shows it (`schedules list`) and respects it (`schedules sync` leaves it paused and says so).
 */
const ID = 'canary-heartbeat'; // from schedules/definitions.ts
const NOTE = `paused in the Web UI by ${unique('a-person')}`;

const env = useDevEnv({ ui: true });

describe('the Temporal Web UI, in a real browser', () => {
  test('a schedule paused and triggered from the UI: list shows the pause and its note, sync keeps it paused, the triggered run happened', async () => {
    chromiumPath();
    const taskQueue = unique('web-ui');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    // sync creates every schedule in code; whatever fires meanwhile reaches this test's own stand-ins.
    const outside = await startOutside();
    try {
      await withWorker(env.nativeConnection, taskQueue, () => pauseAndTrigger(cliEnv), { activities: outside.activities });
    } finally {
      await outside.standins.close();
    }
  });
});

async function pauseAndTrigger(cliEnv: Record<string, string>): Promise<void> {
  const synced = await runCli(['schedules', 'sync'], cliEnv);
  assert.equal(synced.code, 0, synced.stderr);
  assert.ok((synced.json.created as string[]).includes(ID), JSON.stringify(synced.json));

  const browser = await launch();
  let pausedAt = 0;
  let triggered: WorkflowExecutionInfo | undefined;
  try {
    const page = await browser.context.newPage();
    await page.goto(`${env.server.uiUrl}/namespaces/${env.server.namespace}/schedules/${ID}`);

    await step(page, 'pause', async () => {
      await page.getByRole('button', { name: 'Pause', exact: true }).click({ timeout: 60_000 });
      const dialog = page.getByRole('dialog');
      await dialog.getByTestId('pause-reason').fill(NOTE);
      await dialog.getByRole('button', { name: 'Pause', exact: true }).click();
      // The page now offers the opposite action: the UI itself shows the schedule paused.
      await page.getByRole('button', { name: 'Unpause', exact: true }).waitFor({ timeout: 30_000 });
    });
    // The server has the pause: from here on only the UI's trigger may start a run.
    pausedAt = Date.now();

    await step(page, 'trigger', async () => {
      await page.getByRole('button', { name: 'Schedule Actions' }).click();
      await page.getByRole('menuitem', { name: 'Trigger' }).click();
      const dialog = page.getByRole('dialog');
      // The UI offers the schedule's own overlap policy first; take it explicitly.
      const own = dialog.getByRole('radio', { name: "Skip (Schedule's current policy)" });
      await own.check();
      assert.equal(await own.isChecked(), true);
      await dialog.getByRole('button', { name: 'Trigger', exact: true }).click();
      await dialog.waitFor({ state: 'hidden', timeout: 30_000 });
    });

    // Exactly one run started after the pause, the UI's trigger, and it completed.
    const afterPause = (ticks: WorkflowExecutionInfo[]) => ticks.filter((t) => t.startTime.getTime() >= pausedAt);
    [triggered] = afterPause(
      await eventually(
        () => ticksOf(env.client, ID),
        (t) => afterPause(t).length === 1 && afterPause(t)[0]!.status.name === 'COMPLETED',
        30_000,
        'the run the UI triggered',
      ),
    );
    const runId = triggered!.workflowId;

    // The UI lists it among the schedule's recent runs.
    await step(page, 'recent runs', () =>
      eventually(
        async () => {
          await page.reload();
          const link = page.getByRole('link', { name: runId, exact: true });
          await page.getByRole('tab', { name: /Recent Runs?$/ }).waitFor({ timeout: 30_000 });
          return link.count();
        },
        (n) => n === 1,
        30_000,
        `${runId} in the UI's recent runs`,
      ),
    );
  } finally {
    await browser.close();
  }

  // The triggered run happened (the Schedule starts the canary's run itself) and ended success.
  const wake = (await env.client.workflow.getHandle(triggered!.workflowId).result()) as RunResult;
  assert.equal(wake.terminalReason, 'success', wake.summary);
  assert.equal(wake.agent, 'canary');

  // `schedules list` reads everything from Temporal: the UI's pause, its note and the triggered run
  // (beside a window that fired between the sync and the pause, when the 5-minute grid fell there).
  const ticks = await ticksOf(env.client, ID);
  assert.equal(ticks.filter((t) => t.startTime.getTime() >= pausedAt).length, 1, 'nothing fired while paused');
  const list = await runCli(['schedules', 'list'], cliEnv);
  assert.equal(list.code, 0, list.stderr);
  const row = (list.json.schedules as Record<string, unknown>[]).find((s) => s.id === ID)!;
  assert.equal(row.paused, true);
  assert.equal(row.note, NOTE);
  assert.deepEqual((row.recentRuns as { workflowId: string }[]).map((r) => r.workflowId).sort(), ticks.map((t) => t.workflowId).sort());
  assert.ok((row.recentRuns as { workflowId: string }[]).some((r) => r.workflowId === triggered!.workflowId));
  assert.equal((row.counts as { taken: number }).taken, ticks.length);

  // The next sync respects the person's pause: nothing to change from code, the pause reported, still paused.
  const resync = await runCli(['schedules', 'sync'], cliEnv);
  assert.equal(resync.code, 0, resync.stderr);
  assert.deepEqual(resync.json.created, []);
  assert.deepEqual(resync.json.updated, []);
  assert.ok((resync.json.unchanged as string[]).includes(ID), JSON.stringify(resync.json));
  assert.deepEqual(resync.json.paused, [{ id: ID, note: NOTE }]);
  const desc = await env.client.schedule.getHandle(ID).describe();
  assert.equal(desc.state.paused, true, 'sync never unpauses');
  assert.equal(desc.state.note, NOTE);
}
