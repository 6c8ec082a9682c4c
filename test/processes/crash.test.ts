import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Gate } from '../../src/gate/gate';
import { quickAgents } from '../helpers/agents';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { approveSignal, statusQuery } from '../../src/core/messages';
import type { EffectOutcome } from '../../src/core/contracts';
import { channelService } from '../../tools/standins/channel';
import { exportService } from '../../tools/standins/exports';
import { pullRequestService } from '../../tools/standins/pulls';
import { startStandins, type Standins } from '../../tools/standins';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { outsideEnv } from '../helpers/outside';
import { activityEvents, deferred, spawnWorker, type WorkerProcess } from '../helpers/worker-process';
import { createSchedule, testSchedule, ticksOf } from '../helpers/schedules';
import { ScheduleOverlapPolicy, defaultPayloadConverter } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { registryOf } from '../helpers/app';

/*
 * Seed Test 1 and Test 2 with real worker processes: the worker is SIGKILLed (or SIGSTOPped) at the
 * window under test. The fault injection is in these test hooks on the stand-in servers: they hold a
 * request, or hold a response after the provider applied the effect, and tell the test when.
 */

type Hook = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
/** Per-test hooks, so one set of servers serves every test. */
const hooks: { prPut?: Hook; channelSend?: Hook; exportPost?: Hook; exportPostSend?: Hook } = {};

const env = useDevEnv();
let standins: Standins;
const workers: WorkerProcess[] = [];
before(async () => {
  await env.ready();
  const pulls = pullRequestService();
  pulls.app.addHook('preHandler', async (req, reply) => {
    if (req.method === 'PUT') await hooks.prPut?.(req, reply);
  });
  const channel = channelService();
  channel.app.addHook('onSend', async (req, reply) => {
    if (req.method === 'POST') await hooks.channelSend?.(req, reply);
  });
  const exports = exportService();
  exports.app.addHook('preHandler', async (req, reply) => {
    if (req.method === 'POST') await hooks.exportPost?.(req, reply);
  });
  exports.app.addHook('onSend', async (req, reply) => {
    if (req.method === 'POST') await hooks.exportPostSend?.(req, reply);
  });
  standins = await startStandins({}, { pulls, channel, exports });
});
after(async () => {
  for (const w of workers) await w.kill();
  await standins?.close();
});

const worker = async (taskQueue: string, extra: Record<string, string> = {}) => {
  const w = spawnWorker({ TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue, ...outsideEnv(standins), ...extra });
  workers.push(w);
  await w.ready;
  return w;
};
/** Wait until the client behind the request is gone (its worker was killed), then fail the request unapplied. */
const untilClientGone = async (req: FastifyRequest, reply: FastifyReply) => {
  await new Promise<void>((r) => (req.raw.socket.destroyed ? r() : req.raw.socket.once('close', () => r())));
  await reply.code(503).send({ error: 'client went away' });
};
const effects = (r: RunResult) => (r.output as { committed: EffectOutcome[] }).committed;

describe('crash windows with real worker processes (seed Test 1 and Test 2)', () => {
  test('Test 1: killed between the model turn and the commit, the run resumes without a second model turn and commits once', async () => {
    const taskQueue = unique('t1');
    const repo = unique('acme/t1');
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) });
    const event = {
      source: 'deps',
      entity: `${repo}:react`,
      type: 'release.published',
      occurredAt: '2026-12-02T09:00:00Z',
      payload: { repo, package: 'react', from: '19.0.0', to: '19.1.0' },
    };
    const arrived = deferred();
    let calls = 0;
    hooks.prPut = async (req, reply) => {
      if (++calls > 1) return;
      arrived.resolve();
      await untilClientGone(req, reply);
    };
    const a = await worker(taskQueue);
    const first = await gate.admit({ ...event, deliveryId: 'first' });
    const handle = env.client.workflow.getHandle(first.runKey);
    await arrived.promise; // the commit is on the wire; the model turn is behind it
    const model = await activityEvents(handle, 'modelTurn');
    assert.equal(model.completed, 1, 'the model turn completed before the crash');
    await a.kill();
    await worker(taskQueue);
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.deepEqual((await activityEvents(handle, 'modelTurn')).startedAttempts, [1], 'the model was called once, never again');
    const commit = await activityEvents(handle, 'commitEffect');
    assert.equal(commit.completed, 1);
    assert.deepEqual(commit.startedAttempts, [2], 'the commit ran again on the new worker');
    assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 1, 'exactly one PR');
    assert.equal(result.attempts, 2);
    // The same trigger again: the stored result, nothing runs.
    const again = await gate.admit({ ...event, deliveryId: 'again' });
    assert.equal(again.decision, 'completed');
    assert.deepEqual(again.result, result);
    hooks.prPut = undefined;
  });

  test('Test 1: a stale attempt that completes after its timeout is refused by the server (the fence)', async () => {
    const taskQueue = unique('fence');
    const repo = unique('acme/fence');
    const held = [deferred(), deferred()];
    const arrivedAt = [deferred(), deferred()];
    let calls = 0;
    // Attempt 1 is held until released; every later attempt waits on the second hold, so nothing but
    // the stale attempt can complete while the test looks. (The server may hand a retry to the paused
    // worker's open poll too; then that attempt also times out and another follows.)
    hooks.prPut = async () => {
      const i = Math.min(calls++, 1);
      arrivedAt[i]!.resolve();
      await held[i]!.promise;
    };
    // One open activity poll: when this worker is paused, its open polls can each swallow a retry of
    // the commit (the server hands the task to a poll whose process is stopped), and with Temporal's
    // default of five they could swallow every one of the commit's six attempts.
    const a = await worker(taskQueue, { WAKEGATE_ACTIVITY_POLLERS: '1' });
    const started = await new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) }).admit({
      source: 'deps',
      entity: `${repo}:vite`,
      type: 'release.published',
      occurredAt: '2026-12-02T09:00:00Z',
      payload: { repo, package: 'vite', from: '7.0.0', to: '7.1.0' },
    });
    const handle = env.client.workflow.getHandle(started.runKey);
    await arrivedAt[0]!.promise;
    // The second worker is polling before the first is paused (attempt 1 goes on heartbeating
    // meanwhile), so no retry waits on its start-up, which a loaded machine can make long.
    await worker(taskQueue);
    a.child.kill('SIGSTOP'); // paused, not dead: its attempt will try to finish later
    await arrivedAt[1]!.promise; // the heartbeat timed out and a later attempt runs on the second worker
    held[0]!.resolve(); // attempt 1's provider call returns...
    await new Promise((r) => setTimeout(r, 300));
    a.child.kill('SIGCONT'); // ...and the stale worker reports completion after its timeout
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await activityEvents(handle, 'commitEffect')).completed, 0, 'the stale completion was refused');
    held[1]!.resolve();
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'success');
    assert.ok(effects(result)[0]!.attempt >= 2, 'the outcome recorded is a later attempt’s, not the stale one’s');
    assert.equal((await activityEvents(handle, 'commitEffect')).completed, 1);
    assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 1);
    hooks.prPut = undefined;
  });

  test('Test 2: killed after the provider applied, before completion: keyed post applied once; unkeyed export reconciled as landed', async () => {
    const taskQueue = unique('t2');
    const campaign = unique('t2');
    const posted = deferred();
    let posts = 0;
    hooks.channelSend = async () => {
      if (++posts === 1) {
        posted.resolve();
        await new Promise(() => undefined); // never answer: the worker dies with the effect applied
      }
    };
    let w = await worker(taskQueue);
    const a = await new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) }).admit({
      source: 'campaigns',
      entity: campaign,
      type: 'report.due',
      occurredAt: '2026-12-02T09:00:00Z',
      payload: { dashboards: ['reach'] },
    });
    const handle = env.client.workflow.getHandle(a.runKey);
    await posted.promise;
    assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1);
    await w.kill();
    w = await worker(taskQueue);
    await eventually(
      () => handle.query(statusQuery).catch(() => undefined),
      (s?: RunStatus) => s?.awaitingApproval !== undefined,
      30_000,
      'approval wait',
    );
    assert.equal(posts, 2, 'the post was retried with its key');
    assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1, 'the provider deduplicated it');

    const exported = deferred();
    let exportsSent = 0;
    hooks.exportPostSend = async () => {
      if (++exportsSent === 1) {
        exported.resolve();
        await new Promise(() => undefined);
      }
    };
    await handle.signal(approveSignal, { who: 'ana' });
    await exported.promise;
    await w.kill();
    await worker(taskQueue);
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'success', result.summary);
    const [post, exp] = effects(result);
    assert.equal(post!.outcome, 'already_applied');
    assert.equal(exp!.outcome, 'reconciled_landed');
    assert.equal(exp!.attempt, 2);
    assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 1, 'the export started exactly once');
    hooks.channelSend = undefined;
    hooks.exportPostSend = undefined;
  });

  test('Test 2: killed before the unkeyed export landed: the retry finds nothing and does it, once', async () => {
    const taskQueue = unique('t2b');
    const campaign = unique('t2b');
    const arrived = deferred();
    let calls = 0;
    hooks.exportPost = async (req, reply) => {
      if (++calls > 1) return;
      arrived.resolve();
      await untilClientGone(req, reply);
    };
    const w = await worker(taskQueue);
    const a = await new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) }).admit({
      source: 'campaigns',
      entity: campaign,
      type: 'report.due',
      occurredAt: '2026-12-02T09:00:00Z',
      payload: { dashboards: ['spend'] },
    });
    const handle = env.client.workflow.getHandle(a.runKey);
    await eventually(
      () => handle.query(statusQuery).catch(() => undefined),
      (s?: RunStatus) => s?.awaitingApproval !== undefined,
      30_000,
      'approval wait',
    );
    await handle.signal(approveSignal, { who: 'ana' });
    await arrived.promise;
    await w.kill();
    await worker(taskQueue);
    const result = (await handle.result()) as RunResult;
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(effects(result)[1]!.outcome, 'reconciled_redone');
    assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 1);
    hooks.exportPost = undefined;
  });
});

describe('a schedule window the Schedule started itself, with its worker SIGKILLed', () => {
  test('the run finishes once on another worker, and the window fired again is answered as a duplicate', async () => {
    const taskQueue = unique('crash-sched');
    const first = await worker(taskQueue);
    // The canary holds 30 s in its tool (heartbeating every second; a retry resumes from the time held):
    // long enough that the kill lands while it holds even when seeing it takes many seconds on a
    // loaded machine (8 s was not, beside another test file, and once neither was 15 s: the hold
    // had ended before the kill, and the run rightly recorded one attempt).
    const def = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '1h' }, payload: { holdMs: 30_000 } });
    const handle = await createSchedule(env.client, def, taskQueue);
    const window = { start: new Date('2026-04-01T00:00:00Z'), end: new Date('2026-04-01T00:00:00Z'), overlap: ScheduleOverlapPolicy.BUFFER_ALL };
    await handle.backfill(window);
    const [run] = await eventually(
      () => ticksOf(env.client, def.id),
      (t) => t.length === 1,
      20_000,
      'the window started',
    );
    const wake = env.client.workflow.getHandle(run!.workflowId, run!.runId);
    // The hold, not the record step before it: both heartbeat (every tool call does, the record's
    // first beat carrying no progress), but only the hold records progress, the time held. Seeing
    // the record and killing after it completed could leave the hold scheduled but not yet taken,
    // to be run for the first time by the second worker (attempt 1).
    const heldMs = (a: temporal.api.workflow.v1.IPendingActivityInfo) => {
      const first = a.heartbeatDetails?.payloads?.[0];
      return first ? defaultPayloadConverter.fromPayload<unknown>(first) : undefined;
    };
    const holding = (p: temporal.api.workflow.v1.IPendingActivityInfo[]) =>
      p.some(
        (a) =>
          a.activityType?.name === 'toolCall' &&
          a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
          typeof heldMs(a) === 'number',
      );
    await eventually(async () => (await wake.describe()).raw.pendingActivities ?? [], holding, 20_000, 'the canary holding in its tool');
    await first.kill();
    await worker(taskQueue);
    const result = (await wake.result()) as RunResult;
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.ok((result.attempts ?? 1) >= 2, `the tool was retried on the second worker (attempts ${result.attempts})`);
    // Fired again (a backfill of the same window): answered by the run that took it, nothing runs.
    await handle.backfill(window);
    const runs = await eventually(
      () => ticksOf(env.client, def.id),
      (t) => t.length === 2 && t.every((x) => x.status.name !== 'RUNNING'),
      30_000,
      'the window fired again',
    );
    const again = runs.find((r) => r.runId !== run!.runId)!;
    const answer = (await env.client.workflow.getHandle(again.workflowId, again.runId).result()) as RunResult;
    assert.equal(answer.terminalReason, 'duplicate', answer.summary);
    assert.equal((answer.output as { takenBy: { runId: string } }).takenBy.runId, run!.runId);
    await handle.delete();
  });
});
