import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SupervisorLink, processLeaseStats } from '../../src/supervisor/link';
import { ApplicationFailure } from '@temporalio/common';
import { awaitRun } from '../../src/run/await-run';
import type { GateAnswer } from '../../src/core/decision';
import type { Standins } from '../../tools/standins';
import { releaseUpdate, resetUpdate, supervisorStatusQuery } from '../../src/core/supervisor-messages';
import type { RunResult } from '../../src/core/run-types';
import { approveSignal, statusQuery } from '../../src/core/messages';
import { failingCanary, oneCallAgents } from '../helpers/agents';
import { runCli } from '../helpers/cli';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { standinOutside, startOutside } from '../helpers/outside';
import { actOnSupervisor } from '../../src/supervisor/actions';
import { spawnWorker } from '../helpers/worker-process';
import {
  closeGates,
  startHangingPager,
  startPager,
  supervisedGate,
  supervisedWorker,
  supervisorHandle,
  supervisorStatus,
  testPolicy,
  viewOf,
} from '../helpers/supervisor';
import { exampleApp } from '../helpers/app';
import { supervisorId } from '../../src/core/ids';
import { SUPERVISOR_PRIORITY } from '../../src/core/priority';

/*
 * The supervisor on a real dev server: the storm breaker (paging once, holding, surviving a worker
 * and a dev-server restart, released by a person so each held wake runs once), the error-rate
 * breaker, a spend cap over a sliding window, and a person's halt and drain. Each rule is proven on
 * the supervisor's pure machine (test/unit/supervise-machine.test.ts); these cases prove the wiring:
 * the gate, the runs' leases and holds, visibility, the pager, the CLI, the activities' failures and
 * the workflow's timers for what comes due.
 */

const env = useDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-supervisor-')), 'dev.db') });
let standins: Standins;
let pager: Awaited<ReturnType<typeof startPager>>;
before(async () => {
  await env.ready();
  ({ standins } = await startOutside());
  pager = await startPager();
});
after(async () => {
  await closeGates();
  await pager?.app.close();
  await standins?.close();
});

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const ping = (entity: string, deliveryId = `${entity}-d1`, payload: Record<string, unknown> = {}) => ({
  source: 'ping',
  entity,
  type: 'check',
  occurredAt: ago(30_000),
  payload,
  deliveryId,
});
/** An update the supervisor's validator refused, with this reason. */
const refusedWith = (re: RegExp) => (err: Error) => re.test((err.cause as Error | undefined)?.message ?? '');
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const runsClosed = async (taskQueue: string) =>
  (await env.client.workflow.count(`WorkflowType = 'runWorkflow' AND TaskQueue = '${taskQueue}' AND ExecutionStatus != 'Running'`)).count;
const incidentsFor = (taskQueue: string) => pager.incidents.filter((i) => JSON.stringify(i).includes(taskQueue));

test('a storm trips the breaker, pages once and holds the rest; the halt survives a worker and a dev-server restart; a person resets and releases, and each held wake runs once', async () => {
  const taskQueue = unique('sup-storm');
  const policy = testPolicy({ storm: { fleetPerMinute: 8, rationale: 'test: a storm is more than 8 wakes a minute' } });
  const deps = { supervisor: policy, pager: pager.adapter, outside: standinOutside(standins) };
  let w = await supervisedWorker(env.nativeConnection, taskQueue, deps);
  let gate = supervisedGate(env.client, taskQueue, policy);
  try {
    // The storm: 20 wakes at once, over the threshold of 8 a minute.
    const storm = await Promise.all(range(20).map((i) => gate.admit(ping(unique(`storm-${i}`)))));
    for (const a of storm) assert.ok(a.decision === 'started' || a.decision === 'held', a.decision);
    const tripped = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'halted',
      15_000,
      'the storm trip',
    );
    assert.equal(tripped!.trip?.kind, 'storm');
    assert.match(tripped!.trip!.reason, /over the fleet threshold of 8/);
    // The kill switch's workflow goes before runs' tasks in a backlog (src/core/priority.ts).
    assert.equal((await env.client.workflow.getHandle(supervisorId(taskQueue)).describe()).priority?.priorityKey, SUPERVISOR_PRIORITY.priorityKey);
    await eventually(
      async () => incidentsFor(taskQueue),
      (i) => i.length === 1 && tripped!.trip!.id === 1,
      15_000,
      'one page',
    );

    // After the trip the gate holds every wake: the run is started (durable, deduplicated) and waits before its first step.
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    const laterEvents = range(5).map((i) => ping(unique(`later-${i}`)));
    const later = await Promise.all(laterEvents.map((e) => gate.admit(e)));
    assert.deepEqual(
      later.map((a) => a.decision),
      Array(5).fill('held'),
    );
    assert.ok(later.every((a) => a.held?.tripId === 1 && /fleet threshold/.test(a.held.reason)));

    // Nothing live, nothing lost: every wake either ran before the trip or is held.
    // (Both counts come from visibility, which may lag a run's close by a moment: waited for together.)
    const [settled, closedBefore] = await eventually(
      () => Promise.all([viewOf(env.client, taskQueue), runsClosed(taskQueue)]),
      ([v, closed]) => v.live === 0 && v.held.total >= 5 && closed + v.held.total === 25,
      20_000,
      'every one of the 25 wakes closed or held',
    );
    const heldBefore = settled.held.total;
    assert.equal(closedBefore + heldBefore, 25);
    const held = Object.values(settled.held.byAgent.canary ?? {}).flat();
    assert.equal(held.length, heldBefore);
    for (const a of later)
      assert.ok(
        held.some((h) => h.workflowId === a.runKey),
        `${a.runKey} is listed as held`,
      );
    const oneHeld = await env.client.workflow.getHandle(later[0]!.runKey).query(statusQuery);
    assert.equal(oneHeld.phase, 'held');
    assert.equal(oneHeld.held?.hold, 'halted');

    // A worker restart: a new worker (fresh caches) finds the breaker halted and holds a new wake.
    await w.worker.shutdown();
    await w.running;
    w = await supervisedWorker(env.nativeConnection, taskQueue, deps);
    const afterWorker = await gate.admit(ping(unique('after-worker-restart')));
    assert.equal(afterWorker.decision, 'held');

    // A dev-server restart: the breaker, the trip and every held wake are in its database.
    await gate.close(); // nothing of it left on the connection the restart closes
    await w.worker.shutdown();
    await w.running;
    await env.server.stop();
    await env.server.up();
    await env.reconnect();
    w = await supervisedWorker(env.nativeConnection, taskQueue, deps);
    gate = supervisedGate(env.client, taskQueue, policy);
    const sup = supervisorHandle(env.client, taskQueue);
    assert.equal((await sup.query(supervisorStatusQuery)).mode, 'halted');
    const afterServer = await gate.admit(ping(unique('after-server-restart')));
    assert.equal(afterServer.decision, 'held');
    const stillHeld = await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === heldBefore + 2 && v.live === 0,
      20_000,
      'held after restarts',
    );
    assert.equal(stillHeld.status?.trip?.id, 1);
    assert.equal(incidentsFor(taskQueue).length, 1, 'the trip paged once, restarts or not');

    // Release needs a reset first; a reset needs a person and a reason, and is recorded.
    await assert.rejects(sup.executeUpdate(releaseUpdate, { args: [{ who: 'dana', reason: 'too early', action: 'release' }] }), refusedWith(/reset it first/));
    await assert.rejects(sup.executeUpdate(resetUpdate, { args: [{ who: '', reason: 'x' }] }), refusedWith(/needs a name/));
    const reset = await sup.executeUpdate(resetUpdate, { args: [{ who: 'dana', reason: 'the upstream loop is fixed' }] });
    assert.equal(reset.mode, 'armed');
    assert.deepEqual(
      reset.resets.map((r) => [r.tripId, r.who, r.reason]),
      [[1, 'dana', 'the upstream loop is fixed']],
    );
    await assert.rejects(sup.executeUpdate(resetUpdate, { args: [{ who: 'dana', reason: 'again' }] }), refusedWith(/armed: nothing to reset/));
    // Reset alone releases nothing.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await viewOf(env.client, taskQueue)).held.total, heldBefore + 2);

    await sup.executeUpdate(releaseUpdate, { args: [{ who: 'dana', reason: 'replay what was held', action: 'release' }] });
    await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === 0 && v.live === 0,
      30_000,
      'every held wake ran',
    );
    const allHeld = [...held.map((h) => h.workflowId), afterWorker.runKey, afterServer.runKey];
    for (const id of allHeld) {
      const result = (await env.client.workflow.getHandle(id).result()) as RunResult;
      assert.equal(result.terminalReason, 'success', id);
      assert.equal(result.held?.releasedBy?.who, 'dana');
      assert.equal((await env.client.workflow.count(`WorkflowId = '${id}'`)).count, 1, `${id} ran once`);
    }
    assert.equal(await runsClosed(taskQueue), 27);
    // Dedup still applies to a released wake: a redelivery gets its stored result.
    const again = await gate.admit({ ...laterEvents[0]!, deliveryId: 'redelivery' });
    assert.equal(again.decision, 'completed');
    assert.equal(again.runKey, later[0]!.runKey);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('an error-rate trip from a run of failing runs pages once and holds the next wake', async () => {
  const taskQueue = unique('sup-errors');
  const policy = testPolicy({
    errorRate: { windowMs: 60_000, minRuns: 4, threshold: 0.5, reasons: ['failed', 'escalated', 'budget_exhausted'], rationale: 'test' },
  });
  const agents = failingCanary();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy);
    const answers: GateAnswer[] = [];
    for (const i of range(5)) answers.push(await gate.admit(ping(unique(`failing-${i}`))));
    for (const a of answers) await assert.rejects(awaitRun(env.client, a));
    const s = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (st) => st?.mode === 'halted',
      20_000,
      'the error-rate trip',
    );
    assert.equal(s!.trip?.kind, 'error_rate');
    assert.match(s!.trip!.reason, /of the last \d+ runs of (the fleet|canary) ended failed\/escalated\/budget_exhausted/);
    assert.ok((s!.recentRuns.failed ?? 0) >= 4, JSON.stringify(s!.recentRuns));
    const incidents = await eventually(
      async () => incidentsFor(taskQueue),
      (i) => i.length === 1,
      15_000,
      'one page',
    );
    assert.match(JSON.stringify(incidents[0]), /error_rate/);
    assert.match(JSON.stringify(incidents[0]), /supervisor reset --who/);
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    assert.equal((await gate.admit(ping(unique('after-errors')))).decision, 'held');
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('a spend cap over a sliding window holds the next wake when the window is spent, and lets it through when the window slides', async () => {
  const taskQueue = unique('sup-spend');
  const windowMs = 6000;
  const policy = testPolicy({ caps: { fleet: [], agents: { 'dependency-bump': [{ windowMs, costUsd: 0.000001, rationale: 'test: any spend fills it' }] } } });
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const bump = (pkg: string) => {
      const repo = unique('acme/web');
      return {
        source: 'deps',
        entity: `${repo}:${pkg}`,
        type: 'release.published',
        occurredAt: ago(30_000),
        payload: { repo, package: pkg, from: '1.0.0', to: '1.1.0' },
        deliveryId: unique('d'),
      };
    };
    const first = await gate.admit(bump('left-pad'));
    const firstResult = await awaitRun(env.client, first);
    assert.equal(firstResult.terminalReason, 'success', firstResult.summary);
    assert.ok(firstResult.usage!.costUsd > 0.000001);
    // The supervisor reads the closed run's spend; then the window is spent.
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => !!s?.counters.some((c) => c.scope === 'dependency-bump' && c.name === 'spend USD' && c.value >= c.limit),
      10_000,
      'the spend counted',
    );
    // The window holds the spend from the moment the first run closed (not when this test saw it counted).
    const closedAt = (await env.client.workflow.getHandle(first.runKey).describe()).closeTime!.getTime();
    const second = await gate.admit(bump('right-pad'));
    const handle = env.client.workflow.getHandle(second.runKey);
    const heldStatus = await eventually(
      () => handle.query(statusQuery),
      (st) => st.phase === 'held',
      10_000,
      'the second run held',
    );
    assert.equal(heldStatus.held?.hold, 'cap');
    const sup = await supervisorHandle(env.client, taskQueue).query(supervisorStatusQuery);
    assert.equal(sup.capHolds['dependency-bump']?.scope, 'dependency-bump');
    assert.equal(sup.mode, 'armed', 'a cap holds; it does not trip the breaker');
    await eventually(
      async () => incidentsFor(taskQueue),
      (i) => i.length === 1 && /over its cap/.test(JSON.stringify(i[0])),
      10_000,
      'the cap paged once',
    );
    const result = await awaitRun(env.client, second);
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(result.held?.hold, 'cap');
    const ranAt = Date.parse(result.held!.releasedAt!);
    // Buckets are a sixtieth of the window (100 ms): the spend leaves the window at most that early.
    assert.ok(ranAt - closedAt >= windowMs - 500, `ran ${ranAt - closedAt} ms after the run that spent the window closed (window ${windowMs} ms)`);
    assert.equal(incidentsFor(taskQueue).length, 1);
    // It re-checked when the window could have slid (the lease answer says when), not every holdRecheckMs (1 s here).
    const rechecks = ((await handle.fetchHistory()).events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'recheckHold',
    ).length;
    assert.ok(rechecks >= 1 && rechecks <= 2, `${rechecks} re-checks during a hold of about ${windowMs} ms`);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('halt with runs live: they end cancelled with nothing further committed; drain: live runs finish, nothing new starts, and it reports empty', async () => {
  const taskQueue = unique('sup-halt');
  const policy = testPolicy();
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    // Live: two canaries holding, and a report that posted its summary and waits for approval of its export.
    const holding = await Promise.all(range(2).map((i) => gate.admit(ping(unique(`hold-${i}`), unique('d'), { holdMs: 60_000 }))));
    const campaign = unique('camp');
    const report = await gate.admit({
      source: 'campaigns',
      entity: campaign,
      type: 'config.changed',
      occurredAt: ago(30_000),
      payload: { dashboards: ['reach', 'spend'] },
      deliveryId: unique('d'),
    });
    const reportHandle = env.client.workflow.getHandle(report.runKey);
    await eventually(
      () => reportHandle.query(statusQuery),
      (s) => !!s.awaitingApproval,
      20_000,
      'the report waiting for approval',
    );
    const postsBefore = standins.channel.messages.length;
    assert.ok(postsBefore >= 1);

    const halted = await runCli(['halt', '--who', 'sam', '--reason', 'model provider is degraded'], cliEnv);
    assert.equal(halted.code, 0, halted.stderr);
    assert.equal(halted.json.mode, 'halted');
    for (const a of [...holding, report]) {
      const r = await awaitRun(env.client, a);
      assert.equal(r.terminalReason, 'cancelled', a.runKey);
      assert.equal(r.killedBy?.who, 'sam');
    }
    // The approval that comes too late commits nothing: the run is closed.
    await reportHandle.signal(approveSignal, { who: 'late' }).catch(() => undefined);
    assert.equal(standins.exports.jobs.filter((j) => JSON.stringify(j).includes(campaign)).length, 0, 'no export started');
    assert.equal(standins.channel.messages.length, postsBefore, 'nothing further posted');
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    const heldWhileHalted = await gate.admit(ping(unique('while-halted')));
    assert.equal(heldWhileHalted.decision, 'held');
    // A person's halt is not a trip: no page.
    assert.equal(incidentsFor(taskQueue).length, 0);

    const reset = await runCli(['supervisor', 'reset', '--who', 'sam', '--reason', 'provider is back'], cliEnv);
    assert.equal(reset.code, 0, reset.stderr);
    const discard = await runCli(['supervisor', 'discard', '--who', 'sam', '--reason', 'stale by now'], cliEnv);
    assert.equal(discard.code, 0, discard.stderr);
    const discarded = await awaitRun(env.client, heldWhileHalted);
    assert.equal(discarded.terminalReason, 'discarded');
    assert.match(discarded.summary, /discarded by sam: stale by now/);

    // Drain: two live runs finish, a wake that arrives meanwhile is held, and the drain reports empty.
    const finishing = await Promise.all(range(2).map((i) => gate.admit(ping(unique(`finish-${i}`), unique('d'), { holdMs: 4000 }))));
    await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.live === 2,
      10_000,
      'two live runs',
    );
    const draining = runCli(['drain', '--who', 'sam', '--reason', 'deploy', '--timeout', '60'], cliEnv);
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'draining',
      10_000,
      'draining',
    );
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'draining',
      5000,
      'the gate reading the drain',
    );
    const during = await gate.admit(ping(unique('during-drain')));
    assert.equal(during.decision, 'held');
    const drained = await draining;
    assert.equal(drained.code, 0, drained.stderr);
    assert.equal(drained.json.drained, true);
    assert.equal(drained.json.live, 0);
    assert.match(drained.stderr, /drained: no live run left/);
    for (const a of finishing) assert.equal((await awaitRun(env.client, a)).terminalReason, 'success');
    const st = await env.client.workflow.getHandle(during.runKey).query(statusQuery);
    assert.equal(st.phase, 'held', 'nothing new started during the drain');

    const status = await runCli(['supervisor', 'status'], cliEnv);
    assert.equal(status.code, 0, status.stderr);
    const view = status.json as { status: { mode: string; trip: { kind: string } }; held: { total: number; byAgent: Record<string, unknown> }; live: number };
    assert.equal(view.status.mode, 'draining');
    assert.equal(view.status.trip.kind, 'drain');
    assert.equal(view.held.total, 1);
    assert.ok(view.held.byAgent.canary);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test("a storm during a person's drain turns it into a halt: it pages, and the live runs of agents that stop on a trip are cancelled", async () => {
  const taskQueue = unique('sup-drain-storm');
  const policy = testPolicy({
    storm: { fleetPerMinute: 3, rationale: 'test: a storm is more than 3 wakes a minute' },
    onTrip: { ...exampleApp.supervisorPolicy.onTrip, canary: 'cancel' },
  });
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const live = await gate.admit(ping(unique('drain-live'), unique('d'), { holdMs: 60_000 }));
    await eventually(
      () => env.client.workflow.getHandle(live.runKey).query(statusQuery),
      (s) => s.phase === 'hold',
      20_000,
      'a canary holding',
    );
    const draining = runCli(['drain', '--who', 'sam', '--reason', 'deploy', '--timeout', '60'], {
      TEMPORAL_ADDRESS: env.server.address,
      WAKEGATE_TASK_QUEUE: taskQueue,
    });
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'draining',
      10_000,
      'the gate reading the drain',
    );
    // Three more wakes (held by the drain): four in a minute, over the threshold of 3.
    const held = await Promise.all(range(3).map((i) => gate.admit(ping(unique(`drain-storm-${i}`)))));
    assert.ok(
      held.every((a) => a.decision === 'held'),
      JSON.stringify(held.map((a) => a.decision)),
    );
    const s = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (st) => st?.mode === 'halted',
      15_000,
      'the storm trip during the drain',
    );
    assert.equal(s!.trip?.kind, 'storm');
    assert.match(s!.trip!.reason, /a drain: now halted/);
    const r = await awaitRun(env.client, live);
    assert.equal(r.terminalReason, 'cancelled', 'the live canary was stopped by the trip, not left to finish');
    // `wakegate drain` was waiting for the live run: it reports the halt, not the drain it began as.
    const drained = await draining;
    assert.equal(drained.code, 0, drained.stderr);
    assert.equal(drained.json.mode, 'halted');
    assert.equal((drained.json.trip as { kind?: string } | undefined)?.kind, 'storm');
    assert.match(drained.stderr, /the drain became a halt \(trip #\d+, storm/);
    const incidents = await eventually(
      async () => incidentsFor(taskQueue),
      (i) => i.length === 1,
      10_000,
      'one page',
    );
    assert.match(JSON.stringify(incidents[0]), /storm/);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('a trip whose pager hangs still stops the live runs at once: the page goes on beside the stop', async () => {
  const taskQueue = unique('sup-slow-pager');
  // A pager that takes every request and never answers (each attempt times out after 5 s and retries).
  const hanging = await startHangingPager();
  const policy = testPolicy({
    storm: { fleetPerMinute: 3, rationale: 'test: a storm is more than 3 wakes a minute' },
    onTrip: { ...exampleApp.supervisorPolicy.onTrip, canary: 'cancel' },
  });
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: hanging.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const holding = await Promise.all(range(2).map((i) => gate.admit(ping(unique(`slow-hold-${i}`), unique('d'), { holdMs: 60_000 }))));
    for (const a of holding)
      await eventually(
        () => env.client.workflow.getHandle(a.runKey).query(statusQuery),
        (s) => s.phase === 'hold',
        20_000,
        'a canary holding',
      );
    // Two more wakes: four in a minute, over the threshold of 3.
    await Promise.all(range(2).map((i) => gate.admit(ping(unique(`slow-storm-${i}`)))));
    const tripped = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'halted',
      15_000,
      'the storm trip',
    );
    const trippedAt = Date.now();
    for (const a of holding) {
      const r = await awaitRun(env.client, a);
      assert.equal(r.terminalReason, 'cancelled', a.runKey);
    }
    const stoppedInMs = Date.now() - trippedAt;
    assert.ok(stoppedInMs < 5000, `live runs stopped ${stoppedInMs} ms after the trip, not after the page`);
    assert.ok(hanging.arrived.length >= 1, 'the page was sent');
    const status = await supervisorStatus(env.client, taskQueue);
    assert.equal(status?.trip?.id, tripped!.trip!.id);
    assert.equal(status?.trip?.page, undefined, 'the page is still being tried (it has no outcome yet)');
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
    await hanging.close();
  }
});

/** A worker whose pager refuses the first `refusals` sends (every send, with Infinity), as a pager with a revoked routing key would; it counts the sends. */
async function refusingPagerWorker(taskQueue: string, policy: ReturnType<typeof testPolicy>, refusals: number) {
  const sends = { count: 0 };
  const w = await supervisedWorker(
    env.nativeConnection,
    taskQueue,
    { supervisor: policy, pager: pager.adapter, agents: oneCallAgents(), outside: standinOutside(standins) },
    (real) => ({
      sendPage: async (page) => {
        sends.count += 1;
        if (sends.count <= refusals) throw ApplicationFailure.nonRetryable('the pager refused the event: invalid routing key (test)', 'PagerRejected');
        return real.sendPage(page);
      },
    }),
  );
  return { ...w, sends };
}

const stormPolicy = () => testPolicy({ storm: { fleetPerMinute: 3, rationale: 'test: a storm is more than 3 wakes a minute' }, pageResendMs: 1000 });

test('a page the pager refuses is sent again while its trip stands, at a backoff, until it lands: one incident, and status says when', async () => {
  const taskQueue = unique('sup-page-resend');
  const policy = stormPolicy();
  const w = await refusingPagerWorker(taskQueue, policy, 2);
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, oneCallAgents());
    await Promise.all(range(4).map((i) => gate.admit(ping(unique(`resend-storm-${i}`)))));
    const failed = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => !!s?.trip?.page && 'error' in s.trip.page,
      15_000,
      'the first send refused',
    );
    const page = failed!.trip!.page as { error: string; resendAt?: string; sends?: number };
    assert.match(page.error, /refused the event/);
    assert.ok(page.resendAt && Date.parse(page.resendAt) > Date.parse(failed!.trip!.at), `resent later: ${JSON.stringify(page)}`);
    const landed = await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => !!s?.trip?.page && !('error' in s.trip.page),
      20_000,
      'the page delivered on its third send',
    );
    assert.deepEqual({ status: (landed!.trip!.page as { status: string }).status, sends: landed!.trip!.page!.sends }, { status: 'success', sends: 3 });
    assert.equal(w.sends.count, 3, 'two refused sends, then the one that landed');
    const incidents = await eventually(
      async () => incidentsFor(taskQueue),
      (i) => i.length === 1,
      10_000,
      'one incident',
    );
    assert.match(JSON.stringify(incidents[0]), /storm/);
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(w.sends.count, 3, 'nothing sent after it landed');
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('a stop of live runs that fails is made again until it lands: the kill switch is not lost to a passing outage', async () => {
  const taskQueue = unique('sup-stop-retry');
  const policy = testPolicy();
  const agents = oneCallAgents();
  let stops = 0;
  const w = await supervisedWorker(
    env.nativeConnection,
    taskQueue,
    { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) },
    (real) => ({
      // The first stop fails for good (as when Temporal's frontend is away past the activity's retries).
      stopLiveRuns: async (input) => {
        stops += 1;
        if (stops === 1) throw ApplicationFailure.nonRetryable('the frontend is away (test)');
        return real.stopLiveRuns(input);
      },
    }),
  );
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const holding = await Promise.all(range(2).map((i) => gate.admit(ping(unique(`retry-hold-${i}`), unique('d'), { holdMs: 60_000 }))));
    for (const a of holding)
      await eventually(
        () => env.client.workflow.getHandle(a.runKey).query(statusQuery),
        (s) => s.phase === 'hold',
        20_000,
        'a canary holding',
      );
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'ops', reason: 'stop everything' })).ok);
    for (const a of holding) {
      const r = await awaitRun(env.client, a);
      assert.equal(r.terminalReason, 'cancelled', a.runKey);
      assert.equal(r.killedBy?.who, 'ops');
    }
    assert.ok(stops >= 2, `the stop was made ${stops} times`);
    // The stop lands when its activity returns, after its second sweep (2 s after the runs it cancelled).
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s !== undefined && s.visibilityError === undefined,
      10_000,
      'the failure cleared once the stop landed',
    );
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test("a permit lease that no worker answers gives up after its bound: the run's first step fails and is retried, never waits forever; a refusal for Temporal's in-flight limit is seen and counted", async () => {
  // A supervisor on a queue no worker polls: the lease updates are never taken, and stay in flight.
  const taskQueue = unique('sup-no-worker');
  const policy = testPolicy({ caps: { fleet: [{ windowMs: 60_000, wakes: 100, rationale: 'test' }], agents: {} } });
  // Twelve processes: Temporal keeps 10 updates in flight on one workflow and refuses the others.
  const links = range(12).map(() => new SupervisorLink({ client: env.client, taskQueue, policy }));
  try {
    await links[0]!.ensure(false);
    const t0 = Date.now();
    const waited = await Promise.all(
      links.map(async (link) => {
        await assert.rejects(link.lease('canary'));
        return Date.now() - t0;
      }),
    );
    for (const waitedMs of waited) assert.ok(waitedMs >= 6000 && waitedMs < 15_000, `a lease gave up after ${waitedMs} ms (bound: 8 s)`);
    const refusals = links.reduce((sum, l) => sum + l.stats.inFlightRefusals, 0);
    assert.ok(refusals >= 2, `${refusals} in-flight refusals counted`);
    assert.ok(
      links.filter((l) => l.stats.inFlightRefusals > 0).every((l) => l.stats.leaseRetries > 0),
      'a refused lease was tried again within its bound',
    );
  } finally {
    await Promise.all(links.map((l) => l.close()));
    await supervisorHandle(env.client, taskQueue).terminate('test done');
  }
});

test("a supervisor that takes no update for longer than a first step's old three tries: the run waits it out and runs once, it does not fail", async () => {
  const taskQueue = unique('sup-outage');
  const policy = testPolicy({ caps: { fleet: [{ windowMs: 60_000, wakes: 100, rationale: 'test: every run takes a permit' }], agents: {} } });
  // The supervisor is up on a queue no worker polls: it takes no update (configure, lease), as while
  // its workflow task fails after a worker that held it was killed (what a soak found runs failing on).
  await env.client.workflow.start('supervisorWorkflow', {
    workflowId: supervisorId(taskQueue),
    taskQueue: `${taskQueue}-nobody`,
    args: [{ taskQueue, policy }],
  });
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy);
    const answer = await gate.admit(ping(unique('outage')));
    assert.equal(answer.decision, 'started');
    const run = env.client.workflow.getHandle(answer.wakes[0]!.runKey);
    // Three tries of the first step (10 s each, 1 s and 2 s apart) are over by 33 s.
    await new Promise((r) => setTimeout(r, 36_000));
    assert.equal((await run.describe()).status.name, 'RUNNING', 'the run is still waiting for its first step');
    await supervisorHandle(env.client, taskQueue).terminate('test: the supervisor comes back (started again on the first use)');
    const result = (await awaitRun(env.client, answer)) as RunResult;
    assert.equal(result.terminalReason, 'success');
    const started = (await run.fetchHistory()).events!.filter((e) => e.activityTaskStartedEventAttributes);
    assert.ok(
      started[0]!.activityTaskStartedEventAttributes!.attempt! >= 4,
      `the first step took ${started[0]!.activityTaskStartedEventAttributes!.attempt} tries`,
    );
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
    await supervisorHandle(env.client, taskQueue)
      .terminate('test done')
      .catch(() => undefined);
  }
});

test('three processes ask for 320 permits under a fleet cap of 120: an unused block goes back; no error, no in-flight refusal, exactly the cap runs, the rest held on it', async () => {
  const taskQueue = unique('sup-blocks');
  const policy = testPolicy({ caps: { fleet: [{ windowMs: 60_000, wakes: 120, rationale: 'test: 120 runs a minute' }], agents: {} } });
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, outside: standinOutside(standins) });
  // Three links, each its own holder with its own stock and at most one lease in flight: three processes.
  const links = range(3).map(() => new SupervisorLink({ client: env.client, taskQueue, policy, cacheMs: 100 }));
  try {
    await links[0]!.ensure(true);
    // 100 runs per process, starting in waves of 10 every 20 ms: each process's stock fills from its demand.
    const wave = async (link: SupervisorLink, n: number) => {
      const out = [];
      for (let i = 0; i < n; i += 10) {
        out.push(...(await Promise.all(range(Math.min(10, n - i)).map(() => link.runVerdict('canary')))));
        await new Promise((r) => setTimeout(r, 20));
      }
      return out;
    };
    // One process alone first: its second wave asks for a block ahead, which it does not use and
    // hands back when its hold ends (2 s): the window counts only the runs.
    const alone = await wave(links[0]!, 20);
    assert.ok(alone.every((v) => v.kind === 'run'));
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (st) => st?.counters.find((c) => c.name === 'runs started' && c.scope === '*')?.value === 20,
      10_000,
      'the unused block handed back',
    );
    assert.ok(links[0]!.stats.returned > 0, 'a block was prefetched and handed back');

    // Then 300 runs, 100 per process at once.
    const first = (await Promise.all(links.map((l) => wave(l, 100)))).flat();
    const ran = first.filter((v) => v.kind === 'run').length;
    assert.ok(ran <= 100 && ran >= 50, `${ran} ran in the first pass`);
    assert.ok(
      first.every((v) => v.kind === 'run' || (v.kind === 'hold' && v.hold === 'cap' && /over a rolling cap/.test(v.reason))),
      'the rest are held on the cap',
    );
    // Permits a process prefetched and did not use go back after their hold: the held runs'
    // re-checks may take them, and then every permit of the window has gone to a run, and no more.
    await new Promise((r) => setTimeout(r, 3000));
    const held = first.length - ran;
    const second = (await Promise.all(links.map((l, i) => wave(l, Math.floor(held / 3) + (i < held % 3 ? 1 : 0))))).flat();
    const total = 20 + ran + second.filter((v) => v.kind === 'run').length;
    assert.equal(total, 120, 'exactly the cap ran in the window');
    await new Promise((r) => setTimeout(r, 2500));
    const status = await supervisorStatus(env.client, taskQueue);
    const started = status?.counters.find((c) => c.name === 'runs started' && c.scope === '*');
    assert.equal(started?.value, 120, 'the window counts the runs, and no permit left unused');
    assert.deepEqual(Object.keys(status?.capHolds ?? {}), ['canary']);
    const stats = links.map((l) => l.stats);
    assert.deepEqual(
      stats.map((s) => s.inFlightRefusals),
      [0, 0, 0],
    );
    const updates = stats.reduce((sum, s) => sum + s.leaseUpdates, 0);
    assert.ok(updates < 150, `${updates} lease updates for 300 runs and their re-checks`);
    assert.ok(processLeaseStats().leaseUpdates >= updates, 'the process-wide counts include every link');
    assert.ok(
      stats.some((s) => s.fromStock > 0),
      'runs took permits from the local stock',
    );
  } finally {
    await Promise.all(links.map((l) => l.close()));
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('a release lets held wakes past the halt, not past a cap: one runs, the others wait on the cap, and a discard ends them', async () => {
  const taskQueue = unique('sup-release-cap');
  const policy = testPolicy({ caps: { fleet: [], agents: { canary: [{ windowMs: 60_000, wakes: 1, rationale: 'test: one canary run a minute' }] } } });
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy);
    const halt = await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'sam', reason: 'test: hold everything' });
    assert.ok(halt.ok);
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    const held = await Promise.all(range(3).map((i) => gate.admit(ping(unique(`rc-${i}`)))));
    assert.deepEqual(
      held.map((a) => a.decision),
      ['held', 'held', 'held'],
    );
    await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === 3,
      15_000,
      'three held',
    );

    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'reset', who: 'sam', reason: 'test: back' })).ok);
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'release', who: 'sam', reason: 'test: let them go' })).ok);
    // One permit in the window: one run, released by sam; the other two now wait on the cap.
    const states = async () =>
      Promise.all(
        held.map((a) =>
          env.client.workflow
            .getHandle(a.runKey)
            .describe()
            .then(async (d) => (d.status.name === 'RUNNING' ? (await env.client.workflow.getHandle(a.runKey).query(statusQuery)).held?.hold : 'closed')),
        ),
      );
    const settled = await eventually(
      states,
      (xs) => xs.filter((x) => x === 'closed').length === 1 && xs.filter((x) => x === 'cap').length === 2,
      30_000,
      'one run, two on the cap',
    );
    const ran = held[settled.indexOf('closed')]!;
    const result = await awaitRun(env.client, ran);
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(result.held?.releasedBy?.who, 'sam');

    // A discard reaches wakes held on a cap too.
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'discard', who: 'sam', reason: 'test: not needed' })).ok);
    const discardedAt = Date.now();
    for (const a of held.filter((x) => x !== ran)) assert.equal((await awaitRun(env.client, a)).terminalReason, 'discarded');
    // Through the nudge, not the cap's next re-check (the window is a minute): a nudge that reached a
    // run during a re-check, or a cached read from before the discard, would leave it there.
    const tookMs = Date.now() - discardedAt;
    assert.ok(tookMs < 15_000, `the discard reached the held runs after ${tookMs} ms`);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('held wakes survive a SIGKILLed worker process: the next worker keeps them held, and after a reset and a release each runs once', async () => {
  const taskQueue = unique('sup-kill');
  const spawnEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
  // Real worker processes with the policy in code (src/supervisor/policy.ts); a person's halt trips it.
  let worker = spawnWorker(spawnEnv);
  await worker.ready;
  try {
    const halted = await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'kim', reason: 'bad deploy' });
    assert.ok(halted.ok);
    const gate = supervisedGate(env.client, taskQueue, exampleApp.supervisorPolicy);
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      10_000,
      'the gate reading the halt',
    );
    const events = range(3).map((i) => ping(unique(`kill-${i}`)));
    const held = await Promise.all(events.map((e) => gate.admit(e)));
    assert.deepEqual(
      held.map((a) => a.decision),
      ['held', 'held', 'held'],
    );
    await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === 3,
      20_000,
      'three held',
    );

    await worker.kill(); // SIGKILL while the three runs wait in their hold
    worker = spawnWorker(spawnEnv);
    await worker.ready;
    assert.equal((await viewOf(env.client, taskQueue)).held.total, 3);
    assert.equal((await supervisorStatus(env.client, taskQueue))?.mode, 'halted');

    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'reset', who: 'kim', reason: 'rolled back' })).ok);
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'release', who: 'kim', reason: 'run what waited' })).ok);
    for (const a of held) {
      const r = await awaitRun(env.client, a);
      assert.equal(r.terminalReason, 'success');
      assert.equal(r.held?.releasedBy?.who, 'kim');
      assert.equal((await env.client.workflow.count(`WorkflowId = '${a.runKey}'`)).count, 1);
    }
    for (const e of events) assert.equal((await gate.admit({ ...e, deliveryId: 'again' })).decision, 'completed');
  } finally {
    await worker.kill();
  }
});
