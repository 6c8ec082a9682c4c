import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { composeWorkflows } from '../../src/runtime/plugin';
import { useDevEnv, unique } from '../helpers/env';
import { exampleApp } from '../helpers/app';

/*
 * A team that already runs a Temporal worker adds wakegate to it as a plugin: one Worker.create with
 * the team's own workflows and activities and `plugins: [app.plugin()]` runs the team's workflow and
 * wakegate's runs side by side, on a real dev server.
 */

const env = useDevEnv();

describe('WakegatePlugin on a worker that runs its own workflows', () => {
  test("the team's own workflow and activity, and a wake through wakegate's gate, both run on one worker", async () => {
    const taskQueue = unique('plugin');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../fixtures/own-workflows'),
      activities: { shout: async (text: string) => text.toUpperCase() },
      shutdownGraceTime: '1 second',
      plugins: [exampleApp.plugin()],
    });
    await worker.runUntil(async () => {
      const own = await env.client.workflow.execute('greetWorkflow', { taskQueue, workflowId: unique('greet'), args: ['team'] });
      assert.equal(own, 'HELLO, TEAM');
      const gate = exampleApp.gate(env.client, taskQueue);
      const event = { source: 'ping', entity: unique('plugin'), type: 'check', occurredAt: '2026-12-06T06:00:00Z', payload: {} };
      const first = await gate.admit({ ...event, deliveryId: 'p1' });
      assert.equal(first.decision, 'started');
      const result = await exampleApp.awaitRun(env.client, first);
      assert.equal(result.terminalReason, 'success', result.summary);
      const again = await gate.admit({ ...event, deliveryId: 'p2' });
      assert.equal(again.decision, 'completed');
      await gate.close();
    });
  });

  test('the composed entry re-exports both, once per pair; a worker with no workflows of its own gets wakegate’s alone', () => {
    const own = require.resolve('../fixtures/own-workflows');
    const entry = composeWorkflows(own);
    assert.notEqual(entry, own);
    assert.equal(composeWorkflows(own), entry, 'the same pair, the same entry');
    assert.equal(composeWorkflows(entry), entry, 'a composed entry is not composed again');
    assert.match(composeWorkflows(undefined), /workflows[/\\]index\.ts$/);
  });
});
