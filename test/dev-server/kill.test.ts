import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../src/gate/gate';
import { quickAgents } from '../helpers/agents';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { statusQuery } from '../../src/core/messages';
import { dashboardService } from '../../tools/standins/dashboards';
import { exportService } from '../../tools/standins/exports';
import { channelService } from '../../tools/standins/channel';
import type { Standins } from '../../tools/standins';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { runCli } from '../helpers/cli';
import { startOutside } from '../helpers/outside';
import { deferred } from '../helpers/worker-process';
import { cancellationSignal } from '@temporalio/activity';
import type { ToolInput } from '../../src/core/contracts';
import { registryOf } from '../helpers/app';

/* The kill switch, re-arming, the runs listing, and an ambiguous effect escalated, on the dev server. */

const env = useDevEnv();
let standins: Standins;
let activities: object;
const stall = { dashboard: false, exportPostDrop: false, exportSearchDown: false, channelPost: false };
const postArrived = deferred();
const postReleased = deferred();
const stalledClosed = deferred();
const stalledArrived = deferred();
before(async () => {
  await env.ready();
  const dashboards = dashboardService();
  dashboards.app.addHook('onRequest', async (req) => {
    if (!stall.dashboard) return;
    stalledArrived.resolve();
    // Hold the read until the caller goes away: the activity must be cancelled for that to happen.
    await new Promise<void>((r) => req.raw.socket.once('close', () => r()));
    stalledClosed.resolve();
  });
  const channel = channelService();
  channel.app.addHook('preHandler', async (req) => {
    if (req.method !== 'POST' || !stall.channelPost) return;
    stall.channelPost = false;
    postArrived.resolve();
    await postReleased.promise; // the post is in flight until the test lets it land
  });
  const exports = exportService();
  exports.app.addHook('onSend', async (req, reply) => {
    if (req.method === 'POST' && stall.exportPostDrop) {
      stall.exportPostDrop = false;
      // Applied, answer lost: the ambiguous window. The search goes down with it: the first attempt
      // looked (and found nothing) before it applied; the retry's look cannot answer.
      stall.exportSearchDown = true;
      reply.raw.socket?.destroy();
    }
  });
  exports.app.addHook('preHandler', async (req, reply) => {
    if (req.method === 'GET' && stall.exportSearchDown) await reply.code(503).send({ error: 'search unavailable' });
  });
  ({ standins, activities } = await startOutside({ dashboards, exports, channel }));
});
after(async () => {
  await standins?.close();
});

const cli = (args: string[]) => runCli(args, { TEMPORAL_ADDRESS: env.server.address });

describe('kill switch, re-arm and the runs listing', () => {
  test('`wakegate kill` stops a run with a tool call in flight: cancelled, nothing committed; a redelivery gets the stored outcome until re-armed', async () => {
    const taskQueue = unique('kill');
    const campaign = unique('kill');
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) });
    const event = { source: 'campaigns', entity: campaign, type: 'config.changed', occurredAt: '2026-12-02T10:00:00Z', payload: { dashboards: ['reach'] } };
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        stall.dashboard = true;
        const a = await gate.admit({ ...event, deliveryId: 'k1' });
        await stalledArrived.promise;
        const kill = await cli(['kill', a.runKey, '--reason', 'runaway test', '--who', 'ops']);
        assert.equal(kill.code, 0, kill.stderr);
        assert.equal(kill.json.accepted, true);
        const killedAtMs = Date.now();
        let readStopped = false;
        void stalledClosed.promise.then(() => (readStopped = true));
        const result = (await env.client.workflow.getHandle(a.runKey).result()) as RunResult;
        // The step learns of the cancellation at its next heartbeat (sent every second), so the run
        // ends about a second after the kill; 3 s leaves room for a loaded machine, not for a timeout (10 s).
        const endedInMs = Date.now() - killedAtMs;
        assert.ok(endedInMs < 3000, `the run ended ${endedInMs} ms after the kill was accepted`);
        stall.dashboard = false;
        assert.equal(result.terminalReason, 'cancelled');
        assert.deepEqual(result.killedBy, { who: 'ops', reason: 'runaway test' });
        // The run ends only once its step has stopped: the in-flight read was cancelled and its connection dropped.
        assert.equal(readStopped, true, 'the tool call had stopped before the run said cancelled');
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 0, 'nothing committed');
        // Killing a finished run is refused.
        const again = await cli(['kill', a.runKey, '--reason', 'twice']);
        assert.equal(again.code, 3);

        const redelivered = await gate.admit({ ...event, deliveryId: 'k2' });
        assert.equal(redelivered.decision, 'completed');
        assert.equal(redelivered.result?.terminalReason, 'cancelled');

        const listed = await eventually(
          () => cli(['runs', '--reason', 'cancelled', '--limit', '50']),
          (r) => (r.json.runs as { workflowId: string }[]).some((x) => x.workflowId === a.runKey),
          15_000,
          'runs listing',
        );
        const row = (listed.json.runs as Record<string, unknown>[]).find((x) => x.workflowId === a.runKey)!;
        assert.equal(row.terminalReason, 'cancelled');
        assert.deepEqual(row.deliveryIds, ['k1']);
        assert.equal(row.attempts, 1);

        const rearm = await cli(['rearm', a.runKey]);
        assert.equal(rearm.code, 0, rearm.stderr);
        assert.deepEqual(rearm.json.eventsRearmed, [a.eventKey], 'its coalescer forgets the event the run took: it may be admitted again');
        const fresh = await eventually(
          () => gate.admit({ ...event, deliveryId: 'k3' }),
          (x) => x.decision === 'started',
          15_000,
          'a fresh start after re-arm',
        );
        const freshRun = await eventually(
          () =>
            env.client.workflow
              .getHandle(fresh.runKey)
              .describe()
              .catch(() => undefined),
          (d) => d !== undefined,
          15_000,
          'the fresh run',
        );
        assert.notEqual(freshRun!.runId, rearm.json.deletedRunId);
        await env.client.workflow.getHandle(fresh.runKey).terminate('test done');
      },
      { activities },
    );
  });

  test('an unkeyed export whose answer was lost, with the provider unable to say: escalated, never a silent duplicate', async () => {
    const taskQueue = unique('ambig');
    const campaign = unique('ambig');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) }).admit({
          source: 'campaigns',
          entity: campaign,
          type: 'report.due',
          occurredAt: '2026-12-02T10:00:00Z',
          payload: { dashboards: ['reach'] },
        });
        const handle = env.client.workflow.getHandle(a.runKey);
        await eventually(
          () => handle.query(statusQuery).catch(() => undefined),
          (s?: RunStatus) => s?.awaitingApproval !== undefined,
          30_000,
          'approval wait',
        );
        stall.exportPostDrop = true;
        const ok = await cli(['approve', a.runKey, '--who', 'ana']);
        assert.equal(ok.code, 0, ok.stderr);
        const result = (await handle.result()) as RunResult;
        stall.exportSearchDown = false;
        assert.equal(result.terminalReason, 'escalated', result.summary);
        assert.match((result.output as { ambiguous: { effectKey: string } }).ambiguous.effectKey, /#start_export@n0$/);
        assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 1, 'the first attempt landed once; the retry did not repeat it');
      },
      { activities },
    );
  });
  test('a kill while an effect is in flight lets that effect land and records it; nothing after it starts', async () => {
    const taskQueue = unique('kill-effect');
    const campaign = unique('kill-effect');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        stall.channelPost = true;
        // report.due: post_summary, then start_export (which waits for a person's approval).
        const a = await new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) }).admit({
          source: 'campaigns',
          entity: campaign,
          type: 'report.due',
          occurredAt: '2026-12-02T10:00:00Z',
          payload: { dashboards: ['reach'] },
        });
        await postArrived.promise;
        const kill = await cli(['kill', a.runKey, '--reason', 'stop the report', '--who', 'ops']);
        assert.equal(kill.code, 0, kill.stderr);
        const handle = env.client.workflow.getHandle(a.runKey);
        // Cut off halfway, no one could say whether the post landed: the run waits for it.
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal((await handle.describe()).status.name, 'RUNNING', 'the run waits for its effect in flight');
        postReleased.resolve();
        const result = (await handle.result()) as RunResult;
        assert.equal(result.terminalReason, 'cancelled');
        assert.deepEqual(result.killedBy, { who: 'ops', reason: 'stop the report' });
        const committed = (result.output as { committed: { name: string; outcome: string }[] }).committed;
        assert.deepEqual(
          committed.map((e) => [e.name, e.outcome]),
          [['post_summary', 'applied']],
          'the effect that landed is on the record',
        );
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1, 'posted once');
        assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 0, 'no export started after the kill');
        assert.equal((await handle.query(statusQuery)).awaitingApproval, undefined, 'it never reached the approval wait');
      },
      { activities },
    );
  });
  test("a kill while the step's worker is gone (no heartbeat reaches it): the run waits out the heartbeat timeout and still ends cancelled", async () => {
    const taskQueue = unique('kill-gone');
    const real = activities as { toolCall: (i: ToolInput) => Promise<unknown> };
    const stuck = deferred();
    // The canary's hold, as if its worker had died: it never heartbeats and never answers (until the worker shuts down).
    const gone = {
      ...activities,
      toolCall: async (input: ToolInput) => {
        if (input.tool !== 'hold') return real.toolCall(input);
        stuck.resolve();
        const signal = cancellationSignal();
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('worker shut down'))));
      },
    };
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) });
        const a = await gate.admit({ source: 'ping', entity: unique('gone'), type: 'check', occurredAt: '2026-12-02T10:00:00Z', payload: { holdMs: 60_000 } });
        await stuck.promise;
        const kill = await cli(['kill', a.runKey, '--reason', 'worker is gone', '--who', 'ops']);
        assert.equal(kill.code, 0, kill.stderr);
        const t0 = Date.now();
        const result = (await env.client.workflow.getHandle(a.runKey).result()) as RunResult;
        assert.equal(result.terminalReason, 'cancelled', result.summary);
        assert.deepEqual(result.killedBy, { who: 'ops', reason: 'worker is gone' });
        assert.ok(Date.now() - t0 < 20_000, "within the tool's heartbeat timeout (10 s) and a little");
        const events = (await env.client.workflow.getHandle(a.runKey).fetchHistory()).events ?? [];
        assert.ok(
          events.some((e) => e.activityTaskTimedOutEventAttributes),
          'the step ended in its heartbeat timeout, not in a cancellation it never heard of',
        );
      },
      { activities: gone },
    );
  });
});
