import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import type { RunResult } from '../../src/core/run-types';
import type { EffectOutcome } from '../../src/core/contracts';
import type { ReplayOutcome } from '../../src/shadow/replay';
import type { TrailRun } from '../../src/trail/types';
import { useDevEnv, unique, withWorker } from '../helpers/env';
import { outsideEnv, standinOutside } from '../helpers/outside';
import { runCli } from '../helpers/cli';
import { appOf } from '../helpers/app';
import { startStandins, type Standins } from '../../tools/standins';
import { channelService } from '../../tools/standins/channel';
import { exportService } from '../../tools/standins/exports';
import { fixedAgents, recordedAgents } from '../fixtures/replay-app';

/*
 * `wakegate replay` on the real dev server. Runs of the campaign reporter that export first, then
 * post (test/fixtures/replay-app.ts), fail because the channel refuses every post; each had started
 * its export. The channel is fixed and the deployment goes back to posting first; the failed runs are
 * replayed, each as an execution again of its own workflow ID: each runs once, its export (now at
 * another step) is found, `reconciled_landed`, never started again, and its post (the key the
 * channel refused is not reused) lands under the next key of its slot; the same epoch again starts
 * nothing; another epoch runs them again and finds all.
 */
const env = useDevEnv();
let standins: Standins;
const channel = channelService();
const exports = exportService();
/** The channel refuses every post while this is set: the failure's cause. */
let channelDown = false;
before(async () => {
  await env.ready();
  channel.app.addHook('onRequest', async (req, reply) => {
    if (channelDown && req.method === 'POST') return reply.code(403).send({ error: 'posting is disabled for this workspace' });
  });
  standins = await startStandins({}, { channel, exports });
});
after(async () => {
  await standins?.close();
});

const recorded = appOf(undefined, { agents: recordedAgents });
const fixed = appOf(undefined, { agents: fixedAgents });
const result = async (id: string) => (await env.client.workflow.getHandle(id).result()) as RunResult;
/** The result of the latest execution of a workflow ID, once it has closed (a replay's, after a replay). */
const latestResult = async (id: string, notRunId: string) => {
  for (;;) {
    const d = await env.client.workflow.getHandle(id).describe();
    if (d.runId !== notRunId) return (await env.client.workflow.getHandle(id, d.runId).result()) as RunResult;
    await new Promise((r) => setTimeout(r, 100));
  }
};
const committed = (r: RunResult) => (r.output as { committed: EffectOutcome[] }).committed.map((e) => [e.name, e.outcome, e.effectKey]);

test('failed runs replayed once their cause is fixed: each runs once, a landed export is reconciled_landed, the same epoch starts nothing', async () => {
  const taskQueue = unique('replay');
  const tag = unique('camp');
  const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_APP: 'test/fixtures/replay-app.ts', WAKEGATE_TASK_QUEUE: taskQueue, ...outsideEnv(standins) };
  const replay = (...more: string[]) => runCli(['replay', 'campaign-reporter', '--since', '1h', ...more], cliEnv, 120_000);
  const failing = Array.from({ length: 4 }, (_, i) => `${tag}-${i}`);
  const admitted = await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const gate = recorded.gate(env.client, taskQueue);
      const admit = (k: string) =>
        gate.admit({ source: 'campaigns', entity: k, type: 'report.due', occurredAt: '2026-12-06T10:00:00Z', payload: { dashboards: ['overview'] } });
      const ok = await admit(`${tag}-ok`);
      assert.equal((await result(ok.runKey)).terminalReason, 'success');
      channelDown = true;
      const answers = await Promise.all(failing.map(admit));
      for (const a of answers) await assert.rejects(env.client.workflow.getHandle(a.runKey).result(), WorkflowFailedError);
      return answers.map((a) => a.runKey);
    },
    { activities: recorded.activities({ outside: standinOutside(standins) }) },
  );
  const failedRun = new Map<string, string>();
  for (const id of admitted) failedRun.set(id, (await env.client.workflow.getHandle(id).describe()).runId);
  assert.equal(exports.jobs.length, 5, 'every run started its export before its post was refused');
  assert.equal(channel.messages.length, 1, 'only the first run posted');
  channelDown = false; // the cause is fixed, and the deployment posts first again

  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const dry = await replay('--epoch', 'e1', '--dry-run');
      assert.equal(dry.code, 0, dry.stderr);
      const planned = dry.json.runs as { of: string; after: string; effects: { effect: string; effectKey: string }[] }[];
      assert.deepEqual(planned.map((r) => r.of).sort(), [...admitted].sort(), 'exactly the failed runs');
      for (const r of planned) {
        assert.equal(r.after, failedRun.get(r.of), 'each follows its failed execution');
        assert.deepEqual(r.effects, [
          { effect: 'start_export', effectKey: `${r.of}#start_export@n0`, pinned: true },
          { effect: 'post_summary', effectKey: `${r.of}#post_summary@n0.r1` },
        ]);
      }
      assert.equal(exports.jobs.length, 5, 'a dry run sends nothing');

      const cli = await replay('--epoch', 'e1');
      assert.equal(cli.code, 0, cli.stderr);
      const first = cli.json.runs as ReplayOutcome[];
      assert.deepEqual(first.map((r) => [r.decision, 'workflowId' in r ? r.workflowId : undefined]).sort(), admitted.map((id) => ['started', id]).sort());
      for (const of of admitted) {
        const r = await latestResult(of, failedRun.get(of)!);
        assert.equal(r.terminalReason, 'success', r.summary);
        assert.deepEqual(
          committed(r),
          [
            ['post_summary', 'applied', `${of}#post_summary@n0.r1`],
            ['start_export', 'reconciled_landed', `${of}#start_export@n0`],
          ],
          'the export takes the key the failed run gave it, at another step: found, not started again; the post the channel refused takes the next key of its slot',
        );
      }
      assert.equal(exports.jobs.length, 5, 'no second export');
      assert.equal(channel.messages.length, 5, 'each replay posted once');

      for (const more of [['--epoch', 'e1'], []]) {
        const again = await replay(...more);
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(again.json.runs, [], `${more.join(' ')}: nothing runs again`);
        const listed = again.json.notReplayed as { workflowId: string; why: string }[];
        assert.deepEqual(listed.map((n) => n.workflowId).sort(), [...admitted].sort());
        for (const n of listed) assert.match(n.why, /already replayed: its latest execution \(e1\) ended success/);
      }

      // A named epoch runs the runs that succeeded again, when asked, and every effect is found where the first replay left it.
      const e2 = await replay('--reason', 'success', '--epoch', 'e2');
      assert.equal(e2.code, 0, e2.stderr);
      assert.ok((e2.json.runs as ReplayOutcome[]).every((r) => r.decision === 'started'));
      assert.equal((e2.json.runs as ReplayOutcome[]).length, admitted.length + 1, 'the replayed runs and the run that succeeded first time');
      for (const of of admitted) {
        assert.deepEqual(
          committed(await result(of)),
          [
            ['post_summary', 'already_applied', `${of}#post_summary@n0.r1`],
            ['start_export', 'reconciled_landed', `${of}#start_export@n0`],
          ],
          'e2 takes the key each slot carries: e1 landed the post under it',
        );
      }
      assert.equal(exports.jobs.length, 5);
      assert.equal(channel.messages.length, 5);

      // The decision trail shows the replay and what it replays, with the effects under the recorded run's keys.
      const explain = await runCli(['explain', 'campaign-reporter', failing[0]!, '--json'], cliEnv);
      assert.equal(explain.code, 0, explain.stderr);
      const runs = explain.json.runs as TrailRun[];
      const replayed = runs.filter((r) => r.replay);
      assert.deepEqual(
        replayed.map((r) => r.replay).sort((a, b) => a!.epoch.localeCompare(b!.epoch)),
        [
          { epoch: 'e1', of: admitted[0] },
          { epoch: 'e2', of: admitted[0] },
        ],
      );
      assert.deepEqual(
        replayed.find((r) => r.replay?.epoch === 'e1')!.effects.map((e) => [e.effect, e.effectKey, e.outcome]),
        [
          ['post_summary', `${admitted[0]}#post_summary@n0.r1`, 'applied'],
          ['start_export', `${admitted[0]}#start_export@n0`, 'reconciled_landed'],
        ],
      );
    },
    { activities: fixed.activities({ outside: standinOutside(standins) }) },
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
