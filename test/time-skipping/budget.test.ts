import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { rejectSignal, statusQuery } from '../../src/core/messages';
import { assertClockFree, eventually, startTimeSkippingEnv, unique, withTimeSkippingWorker, workflowBundle } from '../helpers/env';
import { standinOutside, startOutside, startWake, wakeInput } from '../helpers/outside';
import { withBudget } from '../helpers/agents';
import type { BudgetLimits } from '../../src/core/policy';
import type { Standins } from '../../tools/standins';
import { activitiesOf, exampleAgents } from '../helpers/app';
import type { AgentRegistry } from '../../src/agents/registry';
import { sleep } from '@temporalio/activity';

/* Budgets, the shared subagent pool and approval timeouts on the time-skipping server (timers jump). */

let env: TestWorkflowEnvironment;
let standins: Standins;
let worker: Worker;
let running: Promise<void>;
const taskQueue = unique('budget');
before(async () => {
  env = await startTimeSkippingEnv();
  const outside = await startOutside();
  standins = outside.standins;
  worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities: outside.activities });
  running = worker.run();
});
// Each test leaves nothing behind that would hold the server's clock for the next one.
afterEach(() => assertClockFree(env));
after(async () => {
  worker?.shutdown();
  await running;
  await standins?.close();
  await env?.teardown();
});

/**
 * Run one wake to its end. With `tighter`, the agent's own budget is tightened in its definition,
 * which a worker of its own (own task queue) loads: budgets come only from agent definitions.
 */
const run = async (input: ReturnType<typeof wakeInput>, tighter?: Partial<BudgetLimits>) => {
  if (!tighter) return (await startWake(env.client, taskQueue, input)).result();
  const queue = unique('budget-tight');
  const activities = activitiesOf({ agents: withBudget(input.agent, tighter), outside: standinOutside(standins) });
  return withTimeSkippingWorker(env, queue, async () => (await startWake(env.client, queue, input)).result(), { activities });
};
const deps = () => {
  const repo = unique('acme/b');
  return { repo, input: wakeInput('deps', `${repo}:lodash`, 'release.published', { repo, package: 'lodash', from: '4.17.20', to: '4.17.21' }) };
};
const dimension = (r: RunResult) => (r.output as { dimension: string }).dimension;

describe('budgets: a run stops before it would cross any line', () => {
  test('turns', async () => {
    const r = await run(wakeInput('campaigns', unique('c'), 'report.due', { dashboards: ['reach'] }), { turns: 1 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'turns');
    assert.ok(r.usage!.turns <= 1, JSON.stringify(r.usage));
  });

  test('tokens: refused before the model turn, nothing spent', async () => {
    const { input } = deps();
    const r = await run(input, { tokens: 50 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'tokens');
    assert.equal(r.usage!.tokens, 0);
  });

  test('tool calls: the precheck runs, the effect is not made', async () => {
    const { input, repo } = deps();
    const r = await run(input, { toolCalls: 1 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'toolCalls');
    assert.equal(r.usage!.toolCalls, 1);
    assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 0);
  });

  test('cost', async () => {
    const { input } = deps();
    const r = await run(input, { costUsd: 0.000001 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'costUsd');
    assert.ok(r.usage!.costUsd <= 0.000001);
  });

  test('wall clock: the deadline fires while the run waits for approval', async () => {
    const campaign = unique('wc');
    const r = await run(wakeInput('campaigns', campaign, 'report.due', { dashboards: ['reach'] }), { wallClockMs: 30 * 60_000 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'wallClockMs');
    assert.ok(r.usage!.wallClockMs >= 30 * 60_000 && r.usage!.wallClockMs < 4 * 3600_000, JSON.stringify(r.usage));
    assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 0);
  });

  test('wall clock, a tool-only agent: its step times out at the deadline, without a timer', async () => {
    const entity = unique('wc-canary');
    const input = wakeInput('ping', entity, 'check', { holdMs: 60_000 });
    const r = await run(input, { wallClockMs: 3_000 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'wallClockMs');
    assert.match(r.summary, /hold/);
    assert.ok(r.usage!.wallClockMs >= 3_000 && r.usage!.wallClockMs < 60_000, JSON.stringify(r.usage));
    const events = (await env.client.workflow.getHandle(input.runKey).fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.timerStartedEventAttributes).length, 0);
  });

  test('wall clock, an agent with a model: its step times out at the deadline, without a timer', async () => {
    const { input, repo } = deps();
    // The dependency-bump agent (the offline model) with a precheck that holds a minute, heartbeating.
    const def = exampleAgents[input.agent]!;
    const check = def.tools.check_dependency!;
    const slow: AgentRegistry = {
      ...exampleAgents,
      [input.agent]: {
        ...def,
        tools: {
          ...def.tools,
          check_dependency: {
            ...check,
            run: async (args, ctx) => {
              for (let held = 0; held < 60_000; held += 1000) {
                await sleep(1000); // rejects when the activity is cancelled (timed out at the deadline)
                ctx.progress(held);
              }
              return check.run(args, ctx);
            },
          },
        },
      },
    };
    const queue = unique('budget-model-wc');
    const activities = activitiesOf({ agents: withBudget(input.agent, { wallClockMs: 3_000 }, slow), outside: standinOutside(standins) });
    const r = await withTimeSkippingWorker(env, queue, async () => (await startWake(env.client, queue, input)).result(), { activities });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'wallClockMs');
    assert.equal(r.summary, 'stopped before finishing "precheck": the wallClockMs budget would be crossed');
    assert.ok(r.usage!.wallClockMs >= 3_000 && r.usage!.wallClockMs < 60_000, JSON.stringify(r.usage));
    assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 0);
    const events = (await env.client.workflow.getHandle(input.runKey).fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.timerStartedEventAttributes).length, 0, 'no deadline timer');
  });

  test('subagents in parallel share one pool: together they never exceed it', async () => {
    const campaign = unique('pool');
    const readsBefore = standins.dashboards.reads();
    // Each subagent is granted 6 000 tokens; 13 000 fund two of the five.
    const r = await run(wakeInput('campaigns', campaign, 'report.due', { dashboards: ['a', 'b', 'c', 'd', 'e'] }), { tokens: 13_000 });
    assert.equal(r.terminalReason, 'budget_exhausted');
    assert.equal(dimension(r), 'pool');
    const subs = (r.output as { subagents: { terminalReason: string; spent: { tokens: number } }[] }).subagents;
    assert.equal(subs.filter((s) => s.terminalReason === 'success').length, 2);
    assert.ok(r.usage!.tokens <= 13_000);
    assert.equal(
      r.usage!.tokens,
      subs.reduce((n, s) => n + s.spent.tokens, 0),
    );
    assert.equal(standins.dashboards.reads() - readsBefore, 2, 'unfunded subagents never ran');
  });
});

describe('approval of irreversible effects', () => {
  test('no decision within the timeout: escalated, with the draft and what was committed preserved', async () => {
    const campaign = unique('esc');
    const r = await run(wakeInput('campaigns', campaign, 'report.due', { dashboards: ['reach'] }));
    assert.equal(r.terminalReason, 'escalated');
    const out = r.output as {
      answer: { summary: string };
      staged: { effect: string; args: unknown }[];
      committed: { name: string }[];
      awaiting: { effectKey: string };
    };
    assert.match(out.answer.summary, /reach/);
    // What waits for a person is the exact effect with its arguments, as staged.
    assert.deepEqual(out.staged[1], { effect: 'start_export', args: { campaign } });
    assert.deepEqual(
      out.committed.map((e) => e.name),
      ['post_summary'],
    );
    assert.match(out.awaiting.effectKey, /#start_export@n0$/);
    assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 0);
  });

  test('rejected by a person: blocked, the effect is not made', async () => {
    const campaign = unique('rej');
    const handle = await startWake(env.client, taskQueue, wakeInput('campaigns', campaign, 'report.due', { dashboards: ['reach'] }));
    await eventually(
      () => handle.query(statusQuery),
      (s: RunStatus) => s.awaitingApproval !== undefined,
      30_000,
      'approval wait',
    );
    await handle.signal(rejectSignal, { who: 'ben', reason: 'wrong audience' });
    const r = await handle.result();
    assert.equal(r.terminalReason, 'blocked');
    assert.match(r.summary, /ben rejected start_export: wrong audience/);
    assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 0);
  });
});
