import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import type { RunResult } from '../../src/core/run-types';
import type { EffectOutcome } from '../../src/core/contracts';
import type { ReplayedEvent } from '../../src/shadow/replay';
import type { TrailRun } from '../../src/trail/types';
import { startDevEnv, unique, withWorker, type DevEnv } from '../helpers/env';
import { outsideEnv, standinOutside } from '../helpers/outside';
import { runCli } from '../helpers/cli';
import { appOf } from '../helpers/app';
import { startStandins, type Standins } from '../../tools/standins';
import { channelService } from '../../tools/standins/channel';
import { exportService } from '../../tools/standins/exports';
import { replayAgents } from '../fixtures/replay-app';

/*
 * `wakegate replay` on the real dev server: runs of the campaign reporter (export first, then the
 * channel post: test/fixtures/replay-app.ts) fail because the channel refuses every post; each had
 * started its export. The channel is fixed, the failed runs replayed: each runs once, its export is
 * found (`reconciled_landed`), not started again; the same epoch again sends nothing.
 */
let env: DevEnv;
let standins: Standins;
const channel = channelService();
const exports = exportService();
/** The channel refuses every post while this is set: the failure's cause. */
let channelDown = false;
before(async () => {
  env = await startDevEnv();
  channel.app.addHook('onRequest', async (req, reply) => {
    if (channelDown && req.method === 'POST') return reply.code(403).send({ error: 'posting is disabled for this workspace' });
  });
  standins = await startStandins({}, { channel, exports });
});
after(async () => {
  await standins?.close();
  await env?.teardown();
});

const app = appOf(undefined, { agents: replayAgents });

test('failed runs replayed once their cause is fixed: each runs once, a landed export is reconciled_landed, the same epoch sends nothing', async () => {
  const taskQueue = unique('replay');
  const tag = unique('camp');
  const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_APP: 'test/fixtures/replay-app.ts', WAKEGATE_TASK_QUEUE: taskQueue, ...outsideEnv(standins) };
  const ok = `${tag}-ok`;
  const failing = Array.from({ length: 4 }, (_, i) => `${tag}-${i}`);
  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const gate = app.gate(env.client, taskQueue);
      const admit = (k: string) =>
        gate.admit({ source: 'campaigns', entity: k, type: 'report.due', occurredAt: '2026-12-06T10:00:00Z', payload: { dashboards: ['overview'] } });
      const first = await admit(ok);
      assert.equal(((await env.client.workflow.getHandle(first.workflowId).result()) as RunResult).terminalReason, 'success');
      channelDown = true;
      const answers = await Promise.all(failing.map(admit));
      for (const a of answers) await assert.rejects(env.client.workflow.getHandle(a.workflowId).result(), WorkflowFailedError);
      assert.equal(exports.jobs.length, 5, 'every run started its export before its post was refused');
      assert.equal(channel.messages.length, 1, 'only the first run posted');
      channelDown = false; // the cause is fixed

      const dry = await runCli(['replay', 'campaign-reporter', '--reason', 'failed', '--since', '1h', '--epoch', 'e1', '--dry-run'], cliEnv);
      assert.equal(dry.code, 0, dry.stderr);
      const planned = dry.json.runs as { workflowId: string; events: { eventKey: string; replayKey: string }[] }[];
      assert.deepEqual(planned.map((r) => r.workflowId).sort(), answers.map((a) => a.workflowId).sort(), 'exactly the failed runs');
      for (const r of planned)
        assert.deepEqual(
          r.events.map((e) => e.replayKey),
          r.events.map((e) => `${e.eventKey}/replay/e1`),
        );
      assert.equal(exports.jobs.length, 5, 'a dry run sends nothing');

      const cli = await runCli(['replay', 'campaign-reporter', '--reason', 'failed', '--since', '1h', '--epoch', 'e1'], cliEnv, 120_000);
      assert.equal(cli.code, 0, cli.stderr);
      const replayed = cli.json.runs as { workflowId: string; events: ReplayedEvent[] }[];
      assert.equal(replayed.length, 4);
      const results = await Promise.all(
        replayed.map(async (r) => {
          assert.equal(r.events.length, 1);
          assert.equal(r.events[0]!.decision, 'started');
          return { of: r.workflowId, result: (await env.client.workflow.getHandle(r.events[0]!.workflowId!).result()) as RunResult };
        }),
      );
      for (const { of, result } of results) {
        assert.equal(result.terminalReason, 'success', result.summary);
        const committed = (result.output as { committed: EffectOutcome[] }).committed;
        assert.deepEqual(
          committed.map((e) => [e.name, e.outcome, e.effectKey]),
          [
            ['start_export', 'reconciled_landed', `${of}#start_export@0`],
            ['post_summary', 'applied', `${of}#post_summary@1`],
          ],
          'the replay commits under the failed run’s effect keys: its export is found, not started again',
        );
      }
      assert.equal(exports.jobs.length, 5, 'no second export');
      assert.equal(channel.messages.length, 5, 'each replay posted once');

      const again = await runCli(['replay', 'campaign-reporter', '--reason', 'failed', '--since', '1h', '--epoch', 'e1'], cliEnv, 120_000);
      assert.equal(again.code, 0, again.stderr);
      const second = (again.json.runs as { events: ReplayedEvent[] }[]).flatMap((r) => r.events);
      assert.equal(second.length, 4);
      assert.ok(
        second.every((e) => e.decision === 'already_replayed' && results.some((r) => r.result.runKey === e.workflowId)),
        JSON.stringify(second),
      );
      assert.equal(channel.messages.length, 5, 'the same epoch again starts nothing');

      // The decision trail shows the replay and what it replays.
      const explain = await runCli(['explain', 'campaign-reporter', failing[0]!, '--json'], cliEnv);
      assert.equal(explain.code, 0, explain.stderr);
      const runs = explain.json.runs as TrailRun[];
      const replay = runs.find((r) => r.replay);
      assert.ok(replay, JSON.stringify(runs.map((r) => r.runKey)));
      assert.deepEqual(replay.replay, { epoch: 'e1', of: answers[0]!.workflowId });
      assert.deepEqual(
        replay.effects.map((e) => e.outcome),
        ['reconciled_landed', 'applied'],
      );
    },
    { activities: app.activities({ outside: standinOutside(standins) }) },
  );
});

test('bad flags exit 2 before any connection', async () => {
  const nowhere = { TEMPORAL_ADDRESS: '127.0.0.1:1', WAKEGATE_APP: 'test/fixtures/replay-app.ts' };
  const epoch = await runCli(['replay', 'campaign-reporter', '--epoch', 'a/b'], nowhere);
  assert.equal(epoch.code, 2);
  assert.match(String((epoch.json.error as { message: string }).message), /--epoch is 1 to 64/);
  const agent = await runCli(['replay', 'nobody'], nowhere);
  assert.equal(agent.code, 2);
  assert.match(String((agent.json.error as { message: string }).message), /no agent "nobody"/);
});
