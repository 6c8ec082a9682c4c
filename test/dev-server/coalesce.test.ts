import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { Gate } from '../../src/gate/gate';
import { awaitRun } from '../../src/run/await-run';
import type { GateAnswer } from '../../src/core/decision';
import { campaignReporter } from '../../examples/campaign-reporter';
import type { AgentRegistry } from '../../src/agents/registry';
import { standinOutside } from '../helpers/outside';
import { approveSignal, coalescerQuery, offerUpdate, statusQuery } from '../../src/core/messages';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import type { EffectOutcome, ToolInput } from '../../src/core/contracts';
import { startStandins, type Standins } from '../../tools/standins';
import { coalescing, quickAgents, withPolicies } from '../helpers/agents';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { createSchedule, testSchedule } from '../helpers/schedules';
import { registryOf, activitiesOf, exampleAgents } from '../helpers/app';
import { GATE_PRIORITY, RUN_PRIORITY } from '../../src/core/priority';
import { runCli } from '../helpers/cli';
import { whole } from '../../src/core/coalesce-batch';

/*
 * Wake keys and coalescing on the real dev server. The server suggests continue-as-new after 60
 * history events (Temporal's default is 4 Ki), so coalescers here cross runs after a few dozen
 * offers, exactly as a busy one does after thousands.
 */
const env = useDevEnv({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } });
/**
 * The history length at which the next workflow task is suggested to continue as new: its started
 * event is the 60th (scheduled, then started, come next).
 */
const FORGET_DUE_AT = 58;
let standins: Standins;
before(async () => {
  await env.ready();
  standins = await startStandins({});
});
after(async () => {
  await standins?.close();
});

const gateFor = (taskQueue: string, agents: AgentRegistry) => new Gate({ client: env.client, taskQueue, registry: registryOf(agents), decisionWaitMs: 20_000 });
const activitiesFor = (agents: AgentRegistry) => activitiesOf({ agents, outside: standinOutside(standins) });
const ping = (entity: string, type: string, payload: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  source: 'ping',
  entity,
  type,
  occurredAt: '2026-12-02T10:00:00Z',
  payload,
  ...extra,
});
const statusOf = (client: Client, workflowId: string) =>
  client.workflow
    .getHandle(workflowId)
    .query(statusQuery)
    .catch(() => undefined);

describe('one wake per thing, from every direction', () => {
  test('the seed’s incident: a schedule tick, a config change and a retried report about one campaign are one run, one post, one export', async () => {
    // Wide enough that the four admissions land inside one debounce on a loaded 2-core machine.
    const agents = quickAgents({ debouncePeriodMs: 4000, maxWaitMs: 15_000 });
    const taskQueue = unique('incident');
    const gate = gateFor(taskQueue, agents);
    const campaign = unique('fall-sale');
    const tick = {
      source: 'schedule',
      entity: `campaign-report-${campaign}`,
      type: 'tick',
      occurredAt: '2026-12-02T10:00:00Z',
      payload: { campaignId: campaign, dashboards: ['spend'] },
      deliveryId: 'tick-1',
    };
    const change = {
      source: 'campaigns',
      entity: campaign,
      type: 'config.changed',
      occurredAt: '2026-12-02T10:00:20Z',
      payload: { dashboards: ['reach'] },
      version: 7,
      deliveryId: 'hook-1',
    };
    const report = { source: 'campaigns', entity: campaign, type: 'report.due', occurredAt: '2026-12-02T10:00:30Z', payload: {}, deliveryId: 'report-1' };
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gate.admit(tick, { agent: 'campaign-reporter' });
        const b = await gate.admit(change);
        const c = await gate.admit(report);
        const retried = await gate.admit({ ...report, deliveryId: 'report-2' });
        assert.deepEqual([a.decision, b.decision, c.decision, retried.decision], ['started', 'coalesced', 'coalesced', 'in_progress']);
        const run = a.runKey;
        assert.ok(
          [b, c, retried].every((x) => x.runKey === run),
          'every wake names the same run',
        );
        assert.equal(a.wakeKey, campaign);
        assert.notEqual(a.eventKey, b.eventKey, 'three logical events, one wake key');
        // The coalescer's tasks go first in a backlog; its run does not inherit that (src/core/priority.ts).
        assert.equal((await env.client.workflow.getHandle(a.coalescerId!).describe()).priority?.priorityKey, GATE_PRIORITY.priorityKey);

        const waiting = (await eventually(
          () => statusOf(env.client, run),
          (s?: RunStatus) => s?.awaitingApproval !== undefined,
          30_000,
          'approval wait',
        ))!;
        assert.deepEqual(
          waiting.absorbed!.map((e) => e.eventKey),
          [a.eventKey, b.eventKey, c.eventKey],
        );
        assert.deepEqual(waiting.absorbed!.find((e) => e.eventKey === c.eventKey)!.deliveryIds, ['report-1', 'report-2']);
        assert.equal((await env.client.workflow.getHandle(run).describe()).priority?.priorityKey, RUN_PRIORITY.priorityKey);
        // The run's own delivery list holds every event's deliveries, not only the opener's (what `wakegate runs` shows).
        for (const e of waiting.absorbed!)
          for (const id of e.deliveryIds) assert.ok(waiting.deliveryIds.includes(id), `run lists delivery ${id}: ${waiting.deliveryIds.join(', ')}`);

        // With the run live (waiting for the export's approval), another change about the campaign is skipped and recorded.
        const later = await gate.admit({
          ...change,
          occurredAt: '2026-12-02T10:01:00Z',
          version: 8,
          payload: { dashboards: ['clicks'] },
          deliveryId: 'hook-2',
        });
        assert.equal(later.decision, 'skipped');
        assert.equal(later.runKey, run);
        await env.client.workflow.getHandle(run).signal(approveSignal, { who: 'ana' });
        const result = await awaitRun(env.client, a);
        assert.equal(result.terminalReason, 'success', result.summary);
        assert.deepEqual(
          result.absorbed!.map((e) => e.source),
          ['schedule', 'campaigns', 'campaigns'],
        );
        assert.deepEqual(
          result.skipped!.map((e) => e.eventKey),
          [later.eventKey],
        );
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1, 'one post');
        assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 1, 'one export');
        // Every dashboard any absorbed wake named was read.
        assert.equal(result.usage!.turns, 3, 'two dashboards (spend, reach) and one summary turn');

        // Redelivered after the run completed: the stored answer of the run that took it, nothing runs.
        const again = await gate.admit({ ...change, deliveryId: 'hook-1-again' });
        assert.equal(again.decision, 'completed');
        assert.equal(again.original, 'coalesced');
        assert.deepEqual(again.result, result);

        // A genuine second change to the same campaign is a new event: a new run, not a mismatch.
        const second = await gate.admit({
          ...change,
          occurredAt: '2026-12-02T10:05:00Z',
          version: 9,
          payload: { dashboards: ['reach', 'spend'] },
          deliveryId: 'hook-3',
        });
        assert.equal(second.decision, 'started');
        assert.notEqual(second.runKey, run);
        await eventually(
          () => statusOf(env.client, second.runKey),
          (s?: RunStatus) => s?.awaitingApproval !== undefined,
          30_000,
          'second approval wait',
        );
        await env.client.workflow.getHandle(second.runKey).signal(approveSignal, { who: 'ana' });
        assert.equal((await awaitRun(env.client, second)).terminalReason, 'success');
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 2, 'one post per genuine change');
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a burst of 20 events in one second about one key is one run that lists all 20', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 3000, maxWaitMs: 20_000 });
    const taskQueue = unique('burst');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('busy');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const answers: GateAnswer[] = [];
        for (let i = 0; i < 20; i++) {
          answers.push(await gate.admit(ping(entity, `edit-${i}`, {}, { deliveryId: `d-${i}` })));
          await new Promise((r) => setTimeout(r, 40));
        }
        assert.equal(answers[0]!.decision, 'started');
        assert.ok(
          answers.slice(1).every((a) => a.decision === 'coalesced'),
          JSON.stringify(answers.map((a) => a.decision)),
        );
        assert.equal(new Set(answers.map((a) => a.runKey)).size, 1);
        const result = await awaitRun(env.client, answers[0]!);
        assert.equal(result.terminalReason, 'success');
        assert.equal(result.absorbed!.length, 20);
        const runs = await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`);
        assert.equal(runs.count, 1);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a burst of large payloads on one key is one run: past 300,000 characters the events are counted, not carried', async () => {
    // Twelve 200 KB payloads (the gate takes up to 256 KB each): 2.4 MB in one batch would be more
    // than Temporal takes in the run's input or in the coalescer's continue-as-new.
    const agents = coalescing('canary', { debouncePeriodMs: 3000, maxWaitMs: 30_000 });
    const taskQueue = unique('large');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('large');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const answers: GateAnswer[] = [];
        for (let i = 0; i < 12; i++)
          answers.push(await gate.admit(ping(entity, `big-${i}`, { note: `n${i}`, blob: 'x'.repeat(200_000) }, { deliveryId: `d-${i}` })));
        assert.deepEqual(
          answers.map((a) => a.decision),
          ['started', ...Array<string>(11).fill('coalesced')],
        );
        const result = await awaitRun(env.client, answers[0]!);
        assert.equal(result.terminalReason, 'success', result.summary);
        assert.deepEqual(
          result.absorbed!.map((e) => e.type),
          ['big-11'],
          'two 200 KB events are over the budget: the newest is held in full',
        );
        assert.equal(result.absorbed!.length + (result.absorbedOverflow ?? 0), 12, 'every event absorbed, in full or counted');
        const runs = await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`);
        assert.equal(runs.count, 1);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('buffer_one: wakes during a live run become exactly one follow-up run that takes them all', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 200, maxWaitMs: 1000, whileRunning: 'buffer_one' });
    const taskQueue = unique('buffer');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('buffered');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping(entity, 'one', { holdMs: 3000 }));
        await eventually(
          () => statusOf(env.client, first.runKey),
          (s?: RunStatus) => s?.phase === 'hold',
          15_000,
          'the first run holding',
        );
        const two = await gate.admit(ping(entity, 'two', { holdMs: 0 }));
        const three = await gate.admit(ping(entity, 'three', { holdMs: 0 }));
        assert.equal(two.decision, 'started');
        assert.equal(two.runState, 'pending');
        assert.equal(three.decision, 'coalesced');
        assert.equal(three.runKey, two.runKey);
        assert.notEqual(two.runKey, first.runKey);
        const r1 = await awaitRun(env.client, first);
        const r2 = await awaitRun(env.client, two);
        assert.deepEqual(
          r1.absorbed!.map((e) => e.type),
          ['one'],
        );
        assert.deepEqual(
          r2.absorbed!.map((e) => e.type),
          ['two', 'three'],
        );
        assert.ok(Date.parse(r2.absorbed![0]!.occurredAt) > 0);
        assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`)).count, 2);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('cancel: a wake during a live run cancels it and restarts on the newest state with both events', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 200, maxWaitMs: 1000, whileRunning: 'cancel' });
    const taskQueue = unique('cancel');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('restarted');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping(entity, 'old', { holdMs: 60_000 }, { deliveryId: 'old-1' }));
        await eventually(
          () => statusOf(env.client, first.runKey),
          (s?: RunStatus) => s?.phase === 'hold',
          15_000,
          'the first run holding',
        );
        const newer = await gate.admit(ping(entity, 'new', { holdMs: 0 }));
        assert.equal(newer.decision, 'started');
        const cancelled = (await env.client.workflow.getHandle(first.runKey).result()) as RunResult;
        assert.equal(cancelled.terminalReason, 'cancelled');
        assert.equal(cancelled.supersededBy, newer.runKey);
        const restarted = await awaitRun(env.client, newer);
        assert.equal(restarted.terminalReason, 'success');
        assert.deepEqual(
          restarted.absorbed!.map((e) => e.type),
          ['old', 'new'],
        );
        // The old event redelivered: answered by the run that finally took it.
        const again = await gate.admit(ping(entity, 'old', { holdMs: 60_000 }, { deliveryId: 'old-2' }));
        assert.equal(again.decision, 'completed');
        assert.equal(again.runKey, newer.runKey);
        assert.deepEqual(again.result, restarted);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('out of order: an older version is answered stale and runs nothing; a newer one is taken', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 3000, maxWaitMs: 10_000 });
    const taskQueue = unique('stale');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('versioned');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const v5 = await gate.admit(ping(entity, 'v5', {}, { version: 5 }));
        const v3 = await gate.admit(ping(entity, 'v3', {}, { version: 3 }));
        const v6 = await gate.admit(ping(entity, 'v6', {}, { version: 6 }));
        assert.equal(v5.decision, 'started');
        assert.equal(v3.decision, 'stale');
        assert.equal(v3.newestVersion, 5);
        assert.equal(v6.decision, 'coalesced');
        const result = await awaitRun(env.client, v5);
        assert.deepEqual(
          result.absorbed!.map((e) => e.version),
          [5, 6],
        );
        const again = await gate.admit(ping(entity, 'v3', {}, { version: 3, deliveryId: 'late-again' }));
        assert.equal(again.decision, 'stale');
        const status = await env.client.workflow.getHandle(v5.coalescerId!).query(coalescerQuery);
        assert.deepEqual(
          status.state.staleEvents.map((e) => e.eventKey),
          [v3.eventKey],
        );
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('one event fanned out to two agents: two runs, disjoint effect keys', async () => {
    const digest = { ...campaignReporter, policy: { ...campaignReporter.policy, name: 'campaign-digest' } };
    const agents = withPolicies(quickAgents({}, { ...exampleAgents, 'campaign-digest': digest }), (d) =>
      d.policy.approval ? { approval: { ...d.policy.approval, irreversible: 'auto' } } : undefined,
    );
    const taskQueue = unique('fanout');
    const gate = gateFor(taskQueue, agents);
    const campaign = unique('both');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gate.admit({
          source: 'campaigns',
          entity: campaign,
          type: 'config.changed',
          occurredAt: '2026-12-02T11:00:00Z',
          payload: { dashboards: ['spend'] },
        });
        assert.deepEqual(
          a.wakes.map((w) => [w.agent, w.decision]),
          [
            ['campaign-digest', 'started'],
            ['campaign-reporter', 'started'],
          ],
        );
        const results = await Promise.all(a.wakes.map((w) => awaitRun(env.client, w)));
        assert.ok(
          results.every((r) => r.terminalReason === 'success'),
          JSON.stringify(results.map((r) => r.summary)),
        );
        const keys = results.map((r) => ((r.output as { committed: EffectOutcome[] }).committed ?? []).map((e) => e.effectKey));
        assert.equal(keys[0]!.length, 2);
        assert.equal(keys[1]!.length, 2);
        assert.equal(new Set([...keys[0]!, ...keys[1]!]).size, 4, 'no effect key is shared');
        assert.ok(keys[0]!.every((k) => k.startsWith('campaign-digest#')) && keys[1]!.every((k) => k.startsWith('campaign-reporter#')));
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 2, 'each agent posted once');
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('redelivery after continue-as-new and while idle gets the same run’s answer; the coalescer closes only past its dedup horizon', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 100, maxWaitMs: 500, idleCloseMs: 1000, dedupHorizonMs: 12_000 });
    const taskQueue = unique('can');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('long-lived');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping(entity, 'first'));
        const firstResult = await awaitRun(env.client, first);
        // Enough offers to cross the 60-event continue-as-new suggestion several times.
        for (let i = 0; i < 40; i++) await gate.admit(ping(entity, `more-${i}`));
        const coalescer = first.coalescerId!;
        const executions = await eventually(
          () => env.client.workflow.count(`WorkflowId = "${coalescer}"`).then((c) => c.count),
          (n) => n >= 2,
          15_000,
          'continue-as-new',
        );
        assert.ok(executions >= 2, `${executions} coalescer executions`);
        const afterCan = await gate.admit(ping(entity, 'first', {}, { deliveryId: 'again-1' }));
        assert.equal(afterCan.decision, 'completed');
        assert.deepEqual(afterCan.result, firstResult);
        // Idle past idleClose, but the events are inside the dedup horizon: it stays open and still answers.
        await new Promise((res) => setTimeout(res, 1500));
        assert.equal((await env.client.workflow.getHandle(coalescer).describe()).status.name, 'RUNNING', 'open until the horizon has passed');
        const whileIdle = await gate.admit(ping(entity, 'first', {}, { deliveryId: 'again-2' }));
        assert.equal(whileIdle.decision, 'completed');
        assert.deepEqual(whileIdle.result, firstResult);
        await eventually(
          () =>
            env.client.workflow
              .getHandle(coalescer)
              .describe()
              .then((d) => d.status.name),
          (s) => s === 'COMPLETED',
          30_000,
          'close past the horizon',
        );
        // Past the horizon the key is forgotten, as Temporal forgets a closed run past the namespace's retention;
        // a new event about the key starts a new coalescer and a new run.
        const fresh = await gate.admit(ping(entity, 'fresh'));
        assert.equal(fresh.decision, 'started');
        assert.equal((await awaitRun(env.client, fresh)).terminalReason, 'success');
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a real schedule tick for the reporter and a config change about the same campaign reach one coalescer: one run', async () => {
    // The worker's ticks pass the gate with the built-in agents: the reporter's own 10 s debounce.
    const taskQueue = unique('sched-coalesce');
    const campaign = unique('summer');
    const def = testSchedule({
      agent: 'campaign-reporter',
      payload: { campaignId: campaign, dashboards: ['spend'] },
      // Fired by hand (trigger): a spec that cannot fire on its own while the test runs (every 1h did, at the top of an hour).
      spec: { cron: ['0 0 1 1 *'] },
      overlap: 'skip',
      catchUp: 'latest',
    });
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        await createSchedule(env.client, def, taskQueue);
        await env.client.schedule.getHandle(def.id).trigger();
        const coalescer = await eventually(
          () =>
            env.client.workflow
              .getHandle(`campaign-reporter#${campaign}`)
              .query(coalescerQuery)
              .catch(() => undefined),
          (q) => (q?.state.pending?.events.length ?? 0) === 1,
          20_000,
          'the tick offered to the coalescer',
        );
        assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${campaign}"`)).count, 0, 'still debouncing: no run yet');
        const change = await gateFor(taskQueue, exampleAgents).admit({
          source: 'campaigns',
          entity: campaign,
          type: 'config.changed',
          occurredAt: '2026-12-02T12:00:00Z',
          payload: { dashboards: ['reach'] },
        });
        assert.equal(change.decision, 'coalesced');
        assert.equal(change.runKey, coalescer!.state.pending!.runKey);
        await eventually(
          () => statusOf(env.client, change.runKey),
          (s?: RunStatus) => s?.awaitingApproval !== undefined,
          40_000,
          'approval wait',
        );
        await env.client.workflow.getHandle(change.runKey).signal(approveSignal, { who: 'ana' });
        const result = await awaitRun(env.client, change);
        assert.deepEqual(
          result.absorbed!.map((e) => e.source),
          ['schedule', 'campaigns'],
        );
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1);
        await env.client.schedule.getHandle(def.id).delete();
      },
      { activities: activitiesFor(exampleAgents) },
    );
  });

  test('an offer repeated by another delivery (past the remembered answers) never puts a pending event in a batch twice, nor one with other inputs', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 5000, maxWaitMs: 20_000 });
    const taskQueue = unique('reoffer');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('once');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping(entity, 'only'));
        assert.equal(first.decision, 'started');
        const coalescer = env.client.workflow.getHandle(first.coalescerId!);
        // The same event offered again under another offer id: the remembered answers do not match it,
        // so only the pending batch's own membership keeps it single.
        const pending = (await coalescer.query(coalescerQuery)).state.pending!;
        const again = await coalescer.executeUpdate(offerUpdate, { args: [[{ event: pending.events[0]!, offerId: 'another-offer' }]] });
        assert.deepEqual([again[0]!.decision, again[0]!.duplicate], ['started', true]);
        assert.equal(again[0]!.runKey, first.runKey);
        assert.equal((await coalescer.query(coalescerQuery)).state.pending!.events.length, 1, 'the event is in its batch once');
        // The same key with other inputs is refused, not taken.
        const other = await coalescer.executeUpdate(offerUpdate, {
          args: [[{ event: { ...pending.events[0]!, fingerprint: 'other-inputs' }, offerId: 'a-third-offer' }]],
        });
        assert.deepEqual([other[0]!.decision, other[0]!.runKey], ['mismatch', first.runKey]);
        assert.equal((await coalescer.query(coalescerQuery)).state.pending!.events[0]!.fingerprint, pending.events[0]!.fingerprint);
        const result = await awaitRun(env.client, first);
        assert.equal(result.absorbed!.length, 1);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a trigger without a coalescing policy stays on the one-call path', async () => {
    const taskQueue = unique('onecall');
    const gate = gateFor(taskQueue, exampleAgents);
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gate.admit(ping(unique('plain'), 'check'));
        assert.equal(a.decision, 'started');
        assert.equal(a.coalescerId, undefined);
        assert.equal(a.runKey, `canary@${a.eventKey}`);
        const desc = await env.client.workflow.getHandle(a.runKey).describe();
        assert.equal(desc.type, 'runWorkflow');
      },
      { activities: activitiesFor(exampleAgents) },
    );
  });
});

/** `p`, or a failure naming `what` after `ms`: a wake key stuck for good must fail the test, not hang it. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe('no wake left behind: what operators and late senders do', () => {
  test('a redelivery after the coalescer closed runs under a new ID, and the next event about the key runs and is seen', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 100, maxWaitMs: 500, idleCloseMs: 500, dedupHorizonMs: 2000 });
    const taskQueue = unique('late');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('closed');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping(entity, 'first'));
        assert.equal((await awaitRun(env.client, first)).terminalReason, 'success');
        await eventually(
          () =>
            env.client.workflow
              .getHandle(first.coalescerId!)
              .describe()
              .then((d) => d.status.name),
          (st) => st === 'COMPLETED',
          30_000,
          'the coalescer closes past its horizon',
        );
        // The sender retries a day later: past the horizon, a new run under a new ID (never the old run's).
        const again = await gate.admit(ping(entity, 'first', {}, { deliveryId: 'a-day-later' }));
        assert.equal(again.decision, 'started');
        assert.notEqual(again.runKey, first.runKey);
        const next = await gate.admit(ping(entity, 'next'));
        assert.notEqual(next.runKey, first.runKey, 'never coalesced into a run that has closed');
        const nextRun = await within(awaitRun(env.client, next), 60_000, 'the next event’s run');
        assert.equal(nextRun.terminalReason, 'success');
        assert.ok(
          nextRun.absorbed!.some((e) => e.eventKey === next.eventKey),
          'its run saw it',
        );
      },
      { activities: activitiesFor(agents) },
    );
  });

  /**
   * A live run terminated by hand (as from the Web UI: it tells no one) once its coalescer has continued
   * as new, under each `whileRunning` that keeps the run live while wakes come: the next event still
   * runs. A field left out is a claim that case does not make.
   */
  const terminatedLiveRun: {
    whileRunning: 'buffer_one' | 'skip';
    /** The end of the test's name: what else the case shows. */
    outcome: string;
    /** The answer to each of the 30 offers while the run is live. */
    meanwhile?: GateAnswer['decision'];
    /** The answer to the first event after the termination. */
    next?: GateAnswer['decision'];
    /** The next event's run succeeds, with the offers that waited meanwhile. */
    takesMeanwhile: boolean;
  }[] = [
    // The offers wait in the follow-up batch.
    { whileRunning: 'buffer_one', outcome: 'with what waited meanwhile', takesMeanwhile: true },
    // Nothing waits in a batch, so the watch's own look is minutes away, and the coalescer still holds
    // the run for live: the run refuses the record of the next skip, so that event is not answered
    // `skipped` for a dead run; it opens a batch (and the coalescer looks now).
    { whileRunning: 'skip', outcome: 'answered started, not skipped for the dead run', meanwhile: 'skipped', next: 'started', takesMeanwhile: false },
  ];
  for (const c of terminatedLiveRun)
    test(`${c.whileRunning}: a live run terminated by hand after its coalescer continued as new: the next event still runs, ${c.outcome}`, async () => {
      const agents = coalescing('canary', { debouncePeriodMs: 100, maxWaitMs: 500, whileRunning: c.whileRunning });
      const taskQueue = unique(`terminated-${c.whileRunning}`);
      const gate = gateFor(taskQueue, agents);
      const entity = unique('held');
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const live = await gate.admit(ping(entity, 'long', { holdMs: 600_000 }));
          await eventually(
            () => statusOf(env.client, live.runKey),
            (st?: RunStatus) => st !== undefined,
            20_000,
            'the run is live',
          );
          // Enough offers to cross the continue-as-new suggestion (60 events).
          for (let i = 0; i < 30; i++) {
            const meanwhile = await gate.admit(ping(entity, `meanwhile-${i}`));
            if (c.meanwhile) assert.equal(meanwhile.decision, c.meanwhile);
          }
          await eventually(
            () => env.client.workflow.count(`WorkflowId = "${live.coalescerId!}"`).then((n) => n.count),
            (n) => n >= 2,
            20_000,
            'the coalescer continued as new',
          );
          // As from the Web UI: a terminated run tells no one.
          await env.client.workflow.getHandle(live.runKey).terminate('an operator stops it');
          const next = await gate.admit(ping(entity, 'after'));
          if (c.next) assert.equal(next.decision, c.next, 'the first event after the termination');
          const nextRun = await within(awaitRun(env.client, next), 60_000, 'the next event’s run');
          assert.ok(
            nextRun.absorbed!.some((e) => e.eventKey === next.eventKey),
            'its run saw it',
          );
          if (c.takesMeanwhile) {
            assert.equal(nextRun.terminalReason, 'success');
            assert.ok(
              nextRun.absorbed!.some((e) => e.eventKey.includes('meanwhile-0')),
              'with what waited meanwhile',
            );
          }
        },
        { activities: activitiesFor(agents) },
      );
    });

  /**
   * `wakegate rearm` of a run terminated by hand once its coalescer had continued as new (no child
   * result, no end signal reaches the execution that holds it for live), with that execution due to
   * continue as new again when the forget arrives: its loop waits for every handler to finish, the
   * forget among them, so the forget must look at the run itself. The run's event is forgotten, and
   * its redelivery is decided afresh: a new run takes it and records it once.
   */
  test('rearm of a run terminated by hand after a continue-as-new, its coalescer due to continue as new again: the event is forgotten and runs afresh', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 100, maxWaitMs: 500, whileRunning: 'buffer_one' });
    const taskQueue = unique('rearm-terminated');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('rearmed');
    const real = activitiesFor(agents) as unknown as { toolCall: (i: ToolInput) => Promise<unknown> };
    /** The run keys whose `record` step ran, once per call. */
    const recorded: string[] = [];
    // The first run holds for 10 min (live until terminated); once the run is re-armed, a hold ends at once.
    let rearmed = false;
    const activities = {
      ...real,
      toolCall: (i: ToolInput) => {
        if (i.tool === 'record') recorded.push(i.runKey);
        return real.toolCall(i.tool === 'hold' && rearmed ? { ...i, payload: { ...i.payload, holdMs: 0 } } : i);
      },
    };
    const event = ping(entity, 'long', { holdMs: 600_000 });
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const live = await gate.admit({ ...event, deliveryId: 'first' });
        assert.equal(live.decision, 'started');
        await eventually(
          () => statusOf(env.client, live.runKey),
          (st?: RunStatus) => st?.phase === 'hold',
          20_000,
          'the run is live',
        );
        const coalescer = env.client.workflow.getHandle(live.coalescerId!);
        const firstExecution = (await coalescer.describe()).runId;
        // Whole, as the execution that started the run holds it.
        const held = (await coalescer.query(coalescerQuery)).state.running!.events.filter(whole)[0]!;
        // Offers of the live run's event again (one update each: 5 history events, answered from the
        // live run) grow the coalescer's history: past the server's suggestion it continues as new, its
        // run still live; then up to where the next workflow task, the forget's, is suggested to
        // continue as new again.
        let sent = 0;
        let now = await coalescer.describe();
        while (now.runId === firstExecution || now.historyLength < FORGET_DUE_AT) {
          const [again] = await coalescer.executeUpdate(offerUpdate, { args: [[{ event: held, offerId: `again-${sent++}` }]] });
          assert.deepEqual([again!.decision, again!.runKey], ['started', live.runKey], 'answered from the live run');
          assert.ok(sent < 100, 'the coalescer grows its history');
          now = await coalescer.describe();
        }
        assert.equal((await coalescer.query(coalescerQuery)).state.running?.runKey, live.runKey, 'the execution holds the run for live');
        const forgetting = now.runId;
        // As from the Web UI: a terminated run tells no one.
        await env.client.workflow.getHandle(live.runKey).terminate('an operator stops it');
        const rearm = await runCli(['rearm', live.runKey], { TEMPORAL_ADDRESS: env.server.address });
        assert.equal(rearm.code, 0, rearm.stderr);
        assert.deepEqual(rearm.json.eventsRearmed, [live.eventKey], 'the coalescer forgets the event the run took');
        rearmed = true;
        // The interleaving was forced: the forget was taken in a workflow task where Temporal suggested
        // continuing as new, and that execution continued as new once the forget was answered.
        const history = await env.client.workflow.getHandle(live.coalescerId!, forgetting).fetchHistory();
        const events = history.events ?? [];
        const accepted = events.findIndex((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'forget');
        assert.ok(accepted > 0, 'the execution due to continue as new took the forget');
        const startedBefore = events
          .slice(0, accepted)
          .reverse()
          .find((e) => e.workflowTaskStartedEventAttributes);
        assert.equal(
          startedBefore?.workflowTaskStartedEventAttributes?.suggestContinueAsNew,
          true,
          'the forget came when the coalescer was due to continue as new',
        );
        assert.ok(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes, 'and it continued as new after it');
        // The redelivery is decided afresh: a new run takes it and records it once.
        const fresh = await gate.admit({ ...event, deliveryId: 'after-rearm' });
        assert.equal(fresh.decision, 'started');
        assert.notEqual(fresh.runKey, live.runKey);
        const freshRun = await within(awaitRun(env.client, fresh), 60_000, 'the redelivered event’s run');
        assert.equal(freshRun.terminalReason, 'success');
        assert.ok(
          freshRun.absorbed!.some((e) => e.eventKey === live.eventKey),
          'its run took the event',
        );
        assert.deepEqual(
          recorded.filter((k) => k === fresh.runKey),
          [fresh.runKey],
          'recorded once',
        );
      },
      { activities },
    );
  });

  /**
   * `wakegate rearm` of a closed run while its coalescer, terminated by hand, waits for the
   * supervisor's recovery: no chain can take the forget, and the recovery would give the terminated
   * chain's dedup table, with the run's events, to a new chain. Deleting the run then would leave its
   * events decided for a run that no longer exists. Refused, nothing deleted; once recovered, the
   * rearm forgets them and their redelivery runs afresh. No worker runs meanwhile, so no recovery
   * comes before the refusal.
   */
  test('rearm while a coalescer terminated by hand waits for its recovery: refused, nothing deleted; once it runs again, the event runs afresh', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 100, maxWaitMs: 500 });
    const taskQueue = unique('rearm-recovery');
    const entity = unique('recovered');
    const event = ping(entity, 'done');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address };
    const done = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gateFor(taskQueue, agents).admit({ ...event, deliveryId: 'first' });
        assert.equal((await awaitRun(env.client, a)).terminalReason, 'success');
        return a;
      },
      { activities: activitiesFor(agents) },
    );
    const coalescer = env.client.workflow.getHandle(done.coalescerId!);
    await coalescer.terminate('an operator stops the coalescer');
    const refused = await runCli(['rearm', done.runKey], cliEnv);
    assert.equal(refused.code, 3, refused.stdout);
    assert.match(String((refused.json.error as { message: string }).message), /coalescer .* has not been recovered yet/);
    assert.equal((await env.client.workflow.getHandle(done.runKey).describe()).status.name, 'COMPLETED', 'nothing deleted');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const gate = gateFor(taskQueue, agents);
        // A wake on another key has the supervisor watch, and look for terminated coalescers, every few seconds.
        await gate.admit(ping(unique('nudge'), 'nudge'));
        await eventually(
          () => coalescer.describe().then((d) => d.status.name),
          (s) => s === 'RUNNING',
          120_000,
          'the recovery gives the table to a new chain',
        );
        const rearm = await runCli(['rearm', done.runKey], cliEnv);
        assert.equal(rearm.code, 0, rearm.stderr);
        // An adopted row is compact: it names its event by the key's hash.
        assert.equal((rearm.json.eventsRearmed as string[]).length, 1, 'the new chain forgets the event it adopted');
        const fresh = await gate.admit({ ...event, deliveryId: 'after-rearm' });
        assert.equal(fresh.decision, 'started');
        assert.notEqual(fresh.runKey, done.runKey);
        const freshRun = await within(awaitRun(env.client, fresh), 60_000, 'the redelivered event’s run');
        assert.ok(
          freshRun.absorbed!.some((e) => e.eventKey === done.eventKey),
          'its run took the event',
        );
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a coalescer terminated by hand with events waiting in its batch: they still run, and their callers get those runs', async () => {
    // A debounce long enough that the second batch still waits when the coalescer is terminated.
    const agents = coalescing('canary', { debouncePeriodMs: 5000, maxWaitMs: 10_000 });
    const taskQueue = unique('coalescer-terminated');
    const gate = gateFor(taskQueue, agents);
    const entity = unique('waiting');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const done = await gate.admit(ping(entity, 'done'));
        const doneRun = await awaitRun(env.client, done);
        const a = await gate.admit(ping(entity, 'first'));
        const b = await gate.admit(ping(entity, 'second'));
        assert.deepEqual([a.decision, b.decision], ['started', 'coalesced']);
        // Their callers wait meanwhile, on the run key they were answered: it never becomes a run.
        const callers = Promise.all([a, b].map((x) => within(awaitRun(env.client, x), 120_000, 'a caller’s wait')));
        // As from the Web UI: its memory is gone with it.
        await env.client.workflow.getHandle(a.coalescerId!).terminate('an operator stops the coalescer');
        const runs = () => env.client.workflow.list({ query: `WorkflowType = "runWorkflow" AND WakeKey = "${entity}" AND ExecutionStatus = "Completed"` });
        const absorbed = async () => {
          const keys: string[] = [];
          for await (const w of runs())
            keys.push(...(((await env.client.workflow.getHandle(w.workflowId).result()) as RunResult).absorbed ?? []).map((e) => e.eventKey));
          return keys;
        };
        const taken = await eventually(
          absorbed,
          (keys) => keys.includes(a.eventKey) && keys.includes(b.eventKey),
          120_000,
          'the terminated coalescer’s events run',
        );
        assert.equal(taken.filter((k) => k === a.eventKey).length, 1, 'once');
        // Each caller was led to the run its event moved to (a new key, under the new chain).
        for (const [x, got] of [a, b].map((x, i) => [x, callers.then((r) => r[i]!)] as const)) {
          const r = await got;
          assert.ok(
            r.absorbed!.some((e) => e.eventKey === x.eventKey),
            `the run ${x.eventKey} is answered with took it`,
          );
          assert.notEqual(r.runKey, a.runKey, 'not the batch’s first key');
        }
        // Its dedup table went over too: an event it had run is answered from that run, not run again.
        const again = await gate.admit(ping(entity, 'done', {}, { deliveryId: 'after-the-termination' }));
        assert.deepEqual([again.decision, again.runKey], ['completed', done.runKey]);
        assert.deepEqual(again.result, doneRun);
      },
      { activities: activitiesFor(agents) },
    );
  });

  test('a new key’s coalescer terminated before any worker took it: its first event and a signalled one still run, once each', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 500, maxWaitMs: 5000 });
    const taskQueue = unique('coalescer-untaken');
    const entity = unique('untaken');
    // A worker first, so the supervisor (which recovers terminated coalescers) is up; then none.
    await withWorker(
      env.nativeConnection,
      taskQueue,
      () =>
        gateFor(taskQueue, agents)
          .admit(ping(unique('warm'), 'warm'))
          .then((a) => awaitRun(env.client, a)),
      {
        activities: activitiesFor(agents),
      },
    );
    // No worker polls: the first event is answered from the start alone, the second goes by signal after a short wait.
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(agents), decisionWaitMs: 1000 });
    const a = await gate.admit(ping(entity, 'first'));
    const b = await gate.admit(ping(entity, 'second'));
    assert.deepEqual([a.decision, b.decision], ['started', 'accepted']);
    await gate.close();
    const coalescer = env.client.workflow.getHandle(a.coalescerId!);
    const history = await coalescer.fetchHistory();
    assert.ok(!history.events!.some((e) => e.workflowTaskCompletedEventAttributes), 'no worker took a task of it');
    // As from the Web UI, while the worker is behind.
    await coalescer.terminate('an operator stops the coalescer');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const absorbed = async () => {
          const keys: string[] = [];
          for await (const w of env.client.workflow.list({ query: `WorkflowType = "runWorkflow" AND WakeKey = "${entity}" AND ExecutionStatus = "Completed"` }))
            keys.push(...(((await env.client.workflow.getHandle(w.workflowId).result()) as RunResult).absorbed ?? []).map((e) => e.eventKey));
          return keys;
        };
        const taken = await eventually(absorbed, (keys) => keys.includes(a.eventKey) && keys.includes(b.eventKey), 120_000, 'both events run');
        assert.equal(taken.filter((k) => k === a.eventKey).length, 1, 'the first event once');
        assert.equal(taken.filter((k) => k === b.eventKey).length, 1, 'the signalled event once');
      },
      { activities: activitiesFor(agents) },
    );
  });
});
