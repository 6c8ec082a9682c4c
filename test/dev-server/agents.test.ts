import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../src/gate/gate';
import { awaitRun } from '../../src/run/await-run';
import { quickAgents } from '../helpers/agents';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { approveSignal, statusQuery } from '../../src/core/messages';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside } from '../helpers/outside';
import type { Standins } from '../../tools/standins';
import { WakeTokens } from '../../src/core/search-attributes';
import { registryOf } from '../helpers/app';

const env = useDevEnv();
let standins: Standins;
let activities: object;
before(async () => {
  await env.ready();
  ({ standins, activities } = await startOutside());
});
after(async () => {
  await standins?.close();
});

const gateFor = (taskQueue: string) => new Gate({ client: env.client, taskQueue, registry: registryOf(quickAgents()) });

describe('the example agents end to end on the dev server', () => {
  test('dependency bump: opens one PR keyed by branch; the same trigger again returns the stored result', async () => {
    const taskQueue = unique('deps');
    const gate = gateFor(taskQueue);
    const repo = unique('acme/web');
    const event = {
      source: 'deps',
      entity: `${repo}:left-pad`,
      type: 'release.published',
      occurredAt: '2026-12-02T09:00:00Z',
      payload: { repo, package: 'left-pad', from: '1.0.0', to: '1.1.0' },
    };
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit({ ...event, deliveryId: 'a' });
        assert.equal(first.decision, 'started');
        const result = await awaitRun(env.client, first);
        assert.equal(result.terminalReason, 'success', result.summary);
        assert.ok(result.usage && result.usage.tokens > 0 && result.usage.turns === 1 && result.usage.costUsd > 0, JSON.stringify(result.usage));
        const again = await gate.admit({ ...event, deliveryId: 'b' });
        assert.equal(again.decision, 'completed');
        assert.deepEqual(again.result, result);
        const prs = standins.pulls.pulls.filter((p) => p.repo === repo);
        assert.equal(prs.length, 1);
        assert.equal(prs[0]!.branch, 'bump/left-pad-1.1.0');
        const desc = await env.client.workflow.getHandle(first.runKey).describe();
        assert.equal(desc.typedSearchAttributes.get(WakeTokens), result.usage!.tokens);
      },
      { activities },
    );
  });

  test('dependency bump with nothing newer ends no_op before any model turn', async () => {
    const taskQueue = unique('deps-noop');
    const repo = unique('acme/api');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gateFor(taskQueue).admit({
          source: 'deps',
          entity: `${repo}:zod`,
          type: 'check.due',
          occurredAt: '2026-12-02T09:00:00Z',
          payload: { repo, package: 'zod', from: '4.1.0', to: '4.1.0' },
        });
        const result = await awaitRun(env.client, a);
        assert.equal(result.terminalReason, 'no_op');
        assert.equal(result.usage?.tokens, 0);
        assert.equal(result.usage?.turns, 0);
        assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 0);
      },
      { activities },
    );
  });

  test('campaign reporter: subagents read dashboards, posts once, export waits for approval and lands once', async () => {
    const taskQueue = unique('campaign');
    const campaign = unique('spring');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gateFor(taskQueue).admit({
          source: 'campaigns',
          entity: campaign,
          type: 'config.changed',
          occurredAt: '2026-12-02T09:00:00Z',
          payload: { dashboards: ['reach', 'spend', 'quiet-ctr'] },
        });
        const handle = env.client.workflow.getHandle(a.runKey);
        // The run starts once its coalescer's debounce has passed.
        const waiting = (await eventually(
          () => handle.query(statusQuery).catch(() => undefined),
          (s?: RunStatus) => s?.awaitingApproval !== undefined,
          30_000,
          'approval wait',
        ))!;
        assert.match(waiting.awaitingApproval!.effectKey, /#start_export@n0$/);
        assert.deepEqual(waiting.awaitingApproval!.args, { campaign }, 'the person sees the exact arguments');
        assert.equal(standins.channel.messages.filter((m) => m.text.includes(campaign)).length, 1, 'the reversible post went ahead');
        assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 0, 'no export before approval');
        await handle.signal(approveSignal, { who: 'ana', reason: 'looks right' });
        const result = (await handle.result()) as RunResult;
        assert.equal(result.terminalReason, 'success', result.summary);
        assert.equal(standins.exports.jobs.filter((j) => j.campaign === campaign).length, 1);
        assert.match(result.summary, /reach: impressions/);
        assert.equal(result.usage!.turns, 4, 'three subagent turns and one parent turn, all from one pool');
      },
      { activities },
    );
  });
});
