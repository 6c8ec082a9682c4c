import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { statusQuery } from '../../src/core/messages';
import { versionFor } from '../../src/core/rollout';
import { WakeTerminalReason, WakeVersion } from '../../src/core/search-attributes';
import type { WakeAnswer } from '../../src/core/decision';
import { awaitRun } from '../../src/run/await-run';
import { actOnRollout, rolloutStatus, type RolloutRequest, type RolloutTarget } from '../../src/rollout/actions';
import type { Standins } from '../../tools/standins';
import { versionedCanary } from '../fixtures/rollout-agents';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { standinOutside, startOutside } from '../helpers/outside';
import { appOf } from '../helpers/app';
import { loadConfig } from '../../src/config/config';
import { startIngress } from '../../src/processes/ingress-listeners';
import { closeGates, startPager, supervisedGate, supervisedWorker, testPolicy } from '../helpers/supervisor';

/*
 * A rollout of the canary's v2 on the dev server, through the real gate, worker and rollout
 * workflow: the versions runs get by wake key, runs that keep their version while the rollout moves,
 * and a candidate that fails its runs rolled back by the rollout itself.
 */

const env = useDevEnv();
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

const who = { who: 'riley', reason: 'test: try v2' };
/** A check that never fails here (every figure is under its bound): the rollout moves only when a person says. */
const lenient = [{ name: 'failures', metric: 'failures' as const, bound: 1, minRuns: 1000, onFail: 'finish' as const }];
/** A ping; `n` hours on, so each `n` is its own event (the ping source keys events by the hour). */
const ping = (entity: string, payload: Record<string, unknown> = {}, n = 0) => ({
  source: 'ping',
  entity,
  type: 'check',
  occurredAt: new Date(Date.UTC(2026, 11, 7, n)).toISOString(),
  payload,
});

/** A worker of the versioned canary on its own task queue, its gate, its rollout, and what its steps ran. */
async function rig(everyMs = 1000) {
  const taskQueue = unique('rollout');
  const { agents, ran } = versionedCanary();
  const policy = testPolicy();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  const gate = supervisedGate(env.client, taskQueue, policy, agents);
  const app = appOf(agents);
  const target: RolloutTarget = { client: env.client, taskQueue, agent: 'canary', current: 'v1', everyMs };
  const act = async (req: RolloutRequest) => {
    const r = await actOnRollout(target, req);
    assert.ok(r.ok, r.ok ? '' : r.message);
    return r.reply;
  };
  const stop = async () => {
    w.worker.shutdown();
    await w.running;
  };
  return { taskQueue, gate, ran, act, target, stop, app };
}

/** The version and terminal reason a closed run recorded in its search attributes. */
async function recorded(client: Client, answer: WakeAnswer) {
  const handle = client.workflow.getHandle(answer.runKey);
  await handle.result().catch(() => undefined);
  const sa = (await handle.describe()).typedSearchAttributes;
  return { version: sa.get(WakeVersion), reason: sa.get(WakeTerminalReason) };
}

const expected = (wakeKey: string, share: number) => (versionFor({ agent: 'canary', wakeKey, share }) === 'candidate' ? 'v2' : 'v1');

test('a 20% ramp runs the candidate on exactly the wake keys in its share, and a burst on one key on one version', async () => {
  const r = await rig();
  try {
    await r.act({ kind: 'start', candidate: 'v2', share: 0.2, checks: lenient, minRuns: 1000, ...who });
    const tag = unique('k');
    const keys = Array.from({ length: 50 }, (_, i) => `${tag}-${i}`);
    const want = keys.map((k) => expected(k, 0.2));
    assert.ok(want.includes('v1') && want.includes('v2'), 'the keys fall on both sides of the share');
    const answers = await Promise.all(keys.map((k) => r.gate.admit(ping(k))));
    const results = await Promise.all(answers.map((a) => awaitRun(env.client, a)));
    assert.deepEqual(
      results.map((x) => x.agentVersion),
      want,
      'each run on the version of its key',
    );
    for (const [i, a] of answers.entries()) {
      assert.equal((await recorded(env.client, a)).version, want[i], `${a.runKey}: WakeVersion`);
      const steps = r.ran.filter((s) => s.runKey === a.runKey);
      assert.deepEqual(
        steps.map((s) => s.version),
        steps.map(() => want[i]),
        `${a.runKey}: every step ran its version's code`,
      );
      assert.ok(steps.length >= 2);
    }
    // A burst of ten events on each of two keys, one on each side of the share: every run of a key on one version.
    const inShare = keys[want.indexOf('v2')]!;
    const outOfShare = keys[want.indexOf('v1')]!;
    const burst = await Promise.all(
      [inShare, outOfShare].flatMap((k) => Array.from({ length: 10 }, (_, n) => r.gate.admit(ping(k, {}, n + 1)).then((a) => ({ k, a })))),
    );
    assert.equal(new Set(burst.map(({ a }) => a.runKey)).size, 20, 'twenty events, twenty runs');
    for (const { k, a } of burst) assert.equal((await awaitRun(env.client, a)).agentVersion, k === inShare ? 'v2' : 'v1', `${k}: ${a.runKey}`);

    // The operator's /metrics names the versions: the share, and the runs closed by version.
    const v2 = want.filter((v) => v === 'v2').length + 10;
    const v1 = want.length + 20 - v2;
    const config = { ...loadConfig({}).ingress, port: 0, host: '127.0.0.1', operatorPort: 0 };
    const ingress = await startIngress({
      client: env.client,
      taskQueue: r.taskQueue,
      registry: r.app.registry,
      sources: r.app.webhookSources,
      config,
      allowDevSecrets: true,
    });
    try {
      const v2Line = new RegExp(`wakegate_rollout_runs\\{agent="canary",version="v2",outcome="success"\\} ${v2}\\b`);
      const v1Line = new RegExp(`wakegate_rollout_runs\\{agent="canary",version="v1",outcome="success"\\} ${v1}\\b`);
      // Read in the background every 15 s: the first read may come before visibility has the newest runs.
      const metrics = await eventually(
        async () => (await fetch(`${ingress.operatorUrl}/metrics`)).text(),
        (m) => v2Line.test(m) && v1Line.test(m),
        40_000,
        'the rollout figures, every run counted',
      );
      assert.match(metrics, /wakegate_rollout_stale\{agent="canary"\} 0\b/);
      assert.match(metrics, /wakegate_rollout_share\{agent="canary",current="v1",candidate="v2"\} 0.2\b/);
    } finally {
      await ingress.close();
    }
  } finally {
    await r.stop();
  }
});

test('runs in flight keep their version when the rollout moves; a rollback that stops them stops only the candidate', async () => {
  const r = await rig();
  try {
    await r.act({ kind: 'start', candidate: 'v2', share: 1, checks: lenient, minRuns: 1000, ...who });
    const key = unique('hold');
    const long = await r.gate.admit(ping(key, { holdMs: 4000 }));
    const handle = env.client.workflow.getHandle(long.runKey);
    await eventually(
      () => handle.query(statusQuery).catch(() => undefined),
      (s) => s?.phase === 'hold',
      20_000,
      'the v2 run holding',
    );
    await r.act({ kind: 'step', share: 0, ...who, reason: 'test: narrow to none' });
    // The view is cached a second in the worker: past it, a new wake of the same key runs v1.
    await new Promise((res) => setTimeout(res, 1200));
    const after = await awaitRun(env.client, await r.gate.admit(ping(key, {}, 1)));
    assert.equal(after.agentVersion, 'v1', 'a new wake after the step');
    const finished = await awaitRun(env.client, long);
    assert.equal(finished.terminalReason, 'success');
    assert.equal(finished.agentVersion, 'v2', 'the run in flight finished on the version it started with');
    assert.deepEqual([...new Set(r.ran.filter((s) => s.runKey === long.runKey).map((s) => s.version))], ['v2'], 'its hold step, run after the step, ran v2');

    // Ramp again and roll back with stopInFlight: the candidate's run is killed, the current version's is not.
    await r.act({ kind: 'step', share: 1, ...who, reason: 'test: all of them again' });
    await new Promise((res) => setTimeout(res, 1200));
    const candidateRun = await r.gate.admit(ping(unique('c'), { holdMs: 30_000 }));
    await eventually(
      () =>
        env.client.workflow
          .getHandle(candidateRun.runKey)
          .query(statusQuery)
          .catch(() => undefined),
      (s) => s?.phase === 'hold',
      20_000,
      'the candidate run holding',
    );
    const reply = await r.act({ kind: 'rollback', stopInFlight: true, ...who, reason: 'test: stop v2 now' });
    assert.equal(reply.phase, 'rolled_back');
    await new Promise((res) => setTimeout(res, 1200));
    const currentRun = await r.gate.admit(ping(unique('d'), { holdMs: 3000 }));
    const stopped = await awaitRun(env.client, candidateRun);
    assert.equal(stopped.terminalReason, 'cancelled');
    assert.equal(stopped.agentVersion, 'v2');
    assert.match(stopped.summary, /killed by/);
    const kept = await awaitRun(env.client, currentRun);
    assert.equal(kept.terminalReason, 'success');
    assert.equal(kept.agentVersion, 'v1');
  } finally {
    await r.stop();
  }
});

test('a candidate that fails half its runs is rolled back by the rollout itself, with one page and the reason recorded', async () => {
  const r = await rig(1000);
  try {
    await r.act({
      kind: 'start',
      candidate: 'v2',
      share: 1,
      checks: [{ name: 'failures', metric: 'failures', bound: 0.25, minRuns: 4, onFail: 'finish' }],
      minRuns: 1000,
      ...who,
    });
    const tag = unique('f');
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => r.gate.admit(ping(`${tag}-${i}`, { fail: i % 2 === 0 }))));
    const ends = await Promise.all(answers.map((a) => recorded(env.client, a)));
    assert.deepEqual(
      ends.map((e) => `${e.version}:${e.reason}`),
      answers.map((_, i) => (i % 2 === 0 ? 'v2:failed' : 'v2:success')),
    );
    const status = await eventually(
      () => rolloutStatus(env.client, r.taskQueue, 'canary'),
      (s) => s?.state.phase === 'rolled_back',
      15_000,
      'the rollout rolling itself back',
    );
    const entry = status!.state.history.at(-1)!;
    assert.equal(entry.kind, 'rollback');
    assert.equal(entry.who, 'check:failures');
    assert.match(entry.reason, /failures/);
    assert.ok(entry.paged, 'it paged');
    // More evidence rounds pass: still one page.
    await new Promise((res) => setTimeout(res, 3000));
    const pages = pager.incidents.filter((i) => i.dedupKey === entry.paged);
    assert.equal(pages.length, 1);
    assert.equal(pages[0]!.triggers, 1, 'paged once');
    // New wakes run the current version again.
    await new Promise((res) => setTimeout(res, 1200));
    const next = await awaitRun(env.client, await r.gate.admit(ping(unique('after'))));
    assert.equal(next.agentVersion, 'v1');
  } finally {
    await r.stop();
  }
});
