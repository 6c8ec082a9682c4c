import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rolloutId } from '../../src/core/ids';
import type { EvidenceCheck, RolloutStatus, RolloutView } from '../../src/core/rollout';
import { actOnRollout, ensureRollout, rolloutStatus, type RolloutTarget } from '../../src/rollout/actions';
import { eventually, unique, useDevEnv, withWorker } from '../helpers/env';
import { runCli } from '../helpers/cli';
import { closedRun } from '../helpers/rollout';
import { actOnSupervisor } from '../../src/supervisor/actions';

/*
 * The rollout workflow on a real dev server: a promote on too few candidate runs is refused and
 * writes nothing; two operators promoting at once get one outcome; a restart of the dev server in
 * the middle of a rollout loses nothing; the CLI end to end. Closed runs of each version are
 * stood in for by runWorkflow executions that never ran (a start delay), carrying the search
 * attributes a finished run records, and terminated: visibility lists them as the evidence reads.
 */

const env = useDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-rollout-')), 'dev.db') });

const ann = { who: 'ann', reason: 'ship v2' };
const check: EvidenceCheck = { name: 'errors', metric: 'non_success', margin: 0.5, minRuns: 1, onFail: 'finish' };

const target = (taskQueue: string, agent: string): RolloutTarget => ({ client: env.client, taskQueue, agent, current: 'v1', everyMs: 1000 });
const status = async (t: RolloutTarget): Promise<RolloutStatus> => (await rolloutStatus(t.client, t.taskQueue, t.agent))!;
const memoView = async (t: RolloutTarget) => (await t.client.workflow.getHandle(rolloutId(t.taskQueue, t.agent)).describe()).memo?.rollout as RolloutView;
const acceptedUpdates = async (t: RolloutTarget, name: string) =>
  ((await t.client.workflow.getHandle(rolloutId(t.taskQueue, t.agent)).fetchHistory()).events ?? []).filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name,
  ).length;

test('a promote with too few candidate runs is refused, and writes nothing to the history', async () => {
  const taskQueue = unique('rollout-few');
  const t = target(taskQueue, 'triage');
  await withWorker(env.nativeConnection, taskQueue, async () => {
    const started = await actOnRollout(t, { kind: 'start', candidate: 'v2', share: 0.2, minRuns: 3, checks: [check], ...ann });
    assert.ok(started.ok, JSON.stringify(started));
    assert.deepEqual(await memoView(t), { phase: 'ramping', current: 'v1', candidate: 'v2', share: 0.2, rollout: 1 });
    await closedRun(env.client, taskQueue, 'triage', 'v2');
    await closedRun(env.client, taskQueue, 'triage', 'v1');
    await eventually(
      () => status(t),
      (s) => s.state.evidence?.candidate.runs === 1 && s.state.evidence.current.runs === 1,
      30_000,
      'evidence of one run each',
    );

    const refused = await actOnRollout(t, { kind: 'promote', who: 'bob', reason: 'looks fine' });
    assert.deepEqual(refused, { ok: false, message: "1 candidate runs in this step's window: a promote needs 3" });
    assert.equal(await acceptedUpdates(t, 'promote'), 0, 'a refused update is not in the history');
    const s = await status(t);
    assert.equal(s.state.phase, 'ramping');
    assert.deepEqual(
      s.state.history.map((h) => h.kind),
      ['start'],
    );
  });
});

test('two operators promoting at once get one outcome', async () => {
  const taskQueue = unique('rollout-race');
  const t = target(taskQueue, 'triage');
  await withWorker(env.nativeConnection, taskQueue, async () => {
    assert.ok((await actOnRollout(t, { kind: 'start', candidate: 'v2', share: 0.5, minRuns: 2, checks: [check], ...ann })).ok);
    for (const version of ['v2', 'v2', 'v1', 'v1']) await closedRun(env.client, taskQueue, 'triage', version);
    await eventually(
      () => status(t),
      (s) => (s.state.evidence?.candidate.runs ?? 0) >= 2 && s.checks.every((c) => c.status === 'pass'),
      30_000,
      'evidence that passes',
    );

    const [a, b] = await Promise.all([
      actOnRollout(t, { kind: 'promote', who: 'ann', reason: 'two runs, all well' }),
      actOnRollout(t, { kind: 'promote', who: 'bob', reason: 'me too' }),
    ]);
    assert.equal([a, b].filter((r) => r.ok).length, 1, JSON.stringify([a, b]));
    const loser = [a, b].find((r) => !r.ok) as { ok: false; message: string };
    assert.match(loser.message, /v2 is already promoted/);
    const s = await status(t);
    assert.equal(s.state.phase, 'promoted');
    assert.equal(s.state.history.filter((h) => h.kind === 'promote').length, 1);
    assert.equal((await memoView(t)).phase, 'promoted');
  });
});

test('a restart of the dev server in the middle of a rollout loses nothing', async () => {
  const taskQueue = unique('rollout-restart');
  const t = target(taskQueue, 'triage');
  const before = await withWorker(env.nativeConnection, taskQueue, async () => {
    assert.ok((await actOnRollout(t, { kind: 'start', candidate: 'v2', share: 0.1, minRuns: 1, checks: [check], ...ann })).ok);
    assert.ok((await actOnRollout(t, { kind: 'step', share: 0.3, who: 'ann', reason: 'wider' })).ok);
    return eventually(
      () => status(t),
      (s) => s.state.evidence !== undefined,
      30_000,
      'a first piece of evidence',
    );
  });

  await env.server.stop();
  await env.server.up();
  await env.reconnect();

  await withWorker(env.nativeConnection, taskQueue, async () => {
    const after = await status(t);
    assert.deepEqual(after.view, { phase: 'ramping', current: 'v1', candidate: 'v2', share: 0.3, rollout: 1 });
    assert.deepEqual(after.state.history, before.state.history);
    assert.deepEqual(await memoView(t), after.view);
    // It goes on: evidence is taken again after the restart, and a person can act.
    const restartedMs = Date.now();
    await eventually(
      () => status(t),
      (s) => (s.state.evidence?.atMs ?? 0) > restartedMs,
      30_000,
      'evidence after the restart',
    );
    const back = await actOnRollout(t, { kind: 'rollback', who: 'ann', reason: 'done testing' });
    assert.ok(back.ok);
    assert.deepEqual(
      (await status(t)).state.history.map((h) => [h.id, h.kind]),
      [
        [1, 'start'],
        [2, 'step'],
        [3, 'rollback'],
      ],
    );
  });
});

test('a halted fleet holds the rollout: start and step refused, a rollback still taken', async () => {
  const taskQueue = unique('rollout-held');
  const t = target(taskQueue, 'triage');
  await withWorker(env.nativeConnection, taskQueue, async () => {
    assert.ok((await actOnRollout(t, { kind: 'start', candidate: 'v2', share: 0.2, minRuns: 1, checks: [check], ...ann })).ok);
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'sam', reason: 'test: hold everything' })).ok);
    const step = await actOnRollout(t, { kind: 'step', share: 0.5, who: 'ann', reason: 'wider' });
    assert.deepEqual(step, { ok: false, message: 'the fleet is halted: the rollout is held until the supervisor is armed again' });
    assert.equal((await memoView(t)).share, 0.2);
    assert.ok((await actOnRollout(t, { kind: 'rollback', who: 'ann', reason: 'while halted' })).ok);
    const again = await actOnRollout(t, { kind: 'start', candidate: 'v3', share: 0.2, minRuns: 1, checks: [check], ...ann });
    assert.deepEqual(again, { ok: false, message: 'the fleet is halted: the rollout is held until the supervisor is armed again' });
    assert.equal((await status(t)).state.fleet, 'halted');
  });
});

test('an idle rollout starts no timer: its history stays put', async () => {
  const taskQueue = unique('rollout-idle');
  const t = target(taskQueue, 'triage');
  await withWorker(env.nativeConnection, taskQueue, async () => {
    await ensureRollout(t);
    await eventually(
      () => memoView(t),
      (v) => v?.phase === 'idle',
      10_000,
      'the idle view',
    );
    const handle = env.client.workflow.getHandle(rolloutId(taskQueue, 'triage'));
    const events = async () => (await handle.fetchHistory()).events ?? [];
    // Its first workflow task done: the view upserted in it.
    const first = (await eventually(events, (es) => es.some((e) => e.workflowPropertiesModifiedEventAttributes), 10_000, 'the first task')).length;
    await new Promise((r) => setTimeout(r, 3000)); // three evidence periods of a ramp
    const later = await events();
    assert.equal(later.length, first);
    assert.equal(later.filter((e) => e.timerStartedEventAttributes || e.activityTaskScheduledEventAttributes).length, 0);
  });
});

test('the CLI end to end: start, status, and a refused promote exit 3', async () => {
  const taskQueue = unique('rollout-cli');
  const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
  await withWorker(env.nativeConnection, taskQueue, async () => {
    const start = await runCli(
      [
        'rollout',
        'canary',
        'start',
        '--candidate',
        'v2',
        '--share',
        '0.2',
        '--min-runs',
        '5',
        '--check',
        'non_success:margin=0.2:min=5',
        '--who',
        'ann',
        '--reason',
        'cli',
        '--json',
      ],
      cliEnv,
    );
    assert.equal(start.code, 0, start.stderr);
    assert.equal(start.json.accepted, true);
    assert.equal(start.json.phase, 'ramping');
    assert.equal(start.json.share, 0.2);

    const shown = await runCli(['rollout', 'canary', 'status', '--json'], cliEnv);
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(shown.json.view, { phase: 'ramping', current: 'v1', candidate: 'v2', share: 0.2, rollout: 1 });
    assert.equal((shown.json.history as { who: string }[])[0]!.who, 'ann');

    const promote = await runCli(['rollout', 'canary', 'promote', '--who', 'bob', '--reason', 'too soon', '--json'], cliEnv);
    assert.equal(promote.code, 3, promote.stderr);
    assert.deepEqual(promote.json.error, {
      code: 'refused',
      message: `no evidence from this step's window (since ${(shown.json.history as { at: string }[])[0]!.at}) yet: a promote needs 5 candidate runs`,
    });
  });
});
