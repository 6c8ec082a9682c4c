import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defineSchedule, type ScheduleDefinitionInput } from '../../schedules/definition';
import { describeSchedule, triggerSchedule } from '../../schedules/inspect';
import { syncSchedules } from '../../schedules/sync';
import { useDevEnv, unique, eventually } from '../helpers/env';
import { exampleApp } from '../helpers/app';

const env = useDevEnv();

const def = (id: string, over: Partial<ScheduleDefinitionInput> = {}) =>
  defineSchedule({
    id,
    description: 'sync test',
    agent: 'canary',
    cadence: 'fixed_rate',
    spec: { every: '1h' },
    overlap: 'skip',
    catchUp: 'latest',
    rationale: 'sync test: a reconciliation, run once after downtime',
    ...over,
  });

describe('schedules sync (dev server)', () => {
  test('sync twice: the second makes no change; a hand-paused schedule stays paused; prune only removes our own', async () => {
    const taskQueue = unique('sync');
    const a = def(unique('sa'));
    const b = def(unique('sb'), { overlap: 'cancel' });
    const first = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a, b] });
    assert.deepEqual(first.created.sort(), [a.id, b.id].sort());
    const second = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a, b] });
    assert.deepEqual(second.created, []);
    assert.deepEqual(second.updated, []);
    assert.deepEqual(second.unchanged.sort(), [a.id, b.id].sort());
    const before = await env.client.schedule.getHandle(a.id).describe();

    // A person pauses `a` (as the Web UI does); code changes `a`'s payload.
    await env.client.schedule.getHandle(a.id).pause('paused by hand: investigating');
    const a2 = def(a.id, { payload: { note: 'changed' } });
    const third = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a2, b] });
    assert.deepEqual(third.updated, [a.id]);
    assert.deepEqual(third.paused, [{ id: a.id, note: 'paused by hand: investigating' }]);
    const after = await env.client.schedule.getHandle(a.id).describe();
    assert.equal(after.state.paused, true, 'sync never unpauses');
    assert.equal(after.state.note, 'paused by hand: investigating');
    assert.notEqual(after.info.lastUpdatedAt?.getTime(), before.info.lastUpdatedAt?.getTime());
    const fourth = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a2, b] });
    assert.deepEqual(fourth.updated, [], 'still idempotent while paused');
    assert.deepEqual(
      fourth.paused.map((p) => p.id),
      [a.id],
    );

    // `list` reflects what was done in Temporal (Web UI or CLI): paused state, note, policy, a trigger.
    const listed = await describeSchedule(env.client, a2);
    assert.equal(listed.paused, true);
    assert.equal(listed.note, 'paused by hand: investigating');
    assert.equal((listed.policy as { temporal: { overlap: string } }).temporal.overlap, 'skip');
    const trig = await triggerSchedule(env.client, b.id);
    assert.equal(trig.overlap, 'cancel', "trigger uses the schedule's own overlap, not ALLOW_ALL");
    const lb = await eventually(
      () => describeSchedule(env.client, b),
      (d) => (d.counts as { taken: number }).taken >= 1,
      10_000,
      'the trigger in list',
    );
    assert.equal((lb.recentRuns as unknown[]).length, 1);

    // Someone else's schedule is never touched, even by prune.
    const foreign = unique('foreign');
    await env.client.schedule.create({
      scheduleId: foreign,
      spec: { intervals: [{ every: '1h' }] },
      action: { type: 'startWorkflow', workflowType: 'nothing', taskQueue },
      state: { paused: true },
    });
    const conflict = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a2, b, def(foreign)] });
    assert.equal(conflict.conflicts[0]?.id, foreign);
    // Dropped from code: left alone without --prune, removed with it (visibility is eventually consistent).
    await eventually(
      () => syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a2] }),
      (r) => r.notInCode.includes(b.id),
      15_000,
      'b reported as not in code',
    );
    await env.client.schedule.getHandle(b.id).describe(); // still there
    const pruned = await syncSchedules({ client: env.client, taskQueue, registry: exampleApp.registry, definitions: [a2], prune: true });
    assert.deepEqual(pruned.pruned, [b.id]);
    await assert.rejects(env.client.schedule.getHandle(b.id).describe());
    assert.equal((await env.client.schedule.getHandle(foreign).describe()).state.paused, true, 'foreign schedule untouched');
  });
});
