import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRegistry } from '../../src/agents/registry';
import type { AgentDefinition } from '../../src/agents/types';
import type { RunResult } from '../../src/core/run-types';
import { statusQuery } from '../../src/core/messages';
import { awaitRun } from '../../src/run/await-run';
import type { Standins } from '../../tools/standins';
import { oneCallAgents } from '../helpers/agents';
import { runCli } from '../helpers/cli';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { standinOutside, startOutside } from '../helpers/outside';
import { closeGates, startPager, supervisedGate, supervisedWorker, supervisorStatus, testPolicy } from '../helpers/supervisor';

/*
 * Live shadows meet the kill switch, on the dev server: the canary shadowed (sample 1) by a
 * candidate that holds two minutes whatever it is asked, so each real run ends at once and leaves
 * its shadow running. A storm trip that stops the canary stops its shadow too; `wakegate drain`
 * does not wait for shadows, and says how many are left.
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

const SHADOW_HOLD_MS = 120_000;

/** The canary, shadowed by a candidate whose `hold` step holds two minutes. */
function shadowedCanary(): AgentRegistry {
  const base = oneCallAgents();
  const canary = base.canary!;
  const hold = canary.tools.hold!;
  const candidate: AgentDefinition = {
    ...canary,
    tools: {
      ...canary.tools,
      hold: { ...hold, run: (args, ctx) => hold.run(args, { ...ctx, input: { ...ctx.input, payload: { ...ctx.input.payload, holdMs: SHADOW_HOLD_MS } } }) },
    },
  };
  return Object.freeze({ ...base, canary: { ...canary, policy: { ...canary.policy, shadow: { sample: 1 } }, shadow: { candidate, sample: 1 } } });
}

const ping = (entity: string) => ({ source: 'ping', entity, type: 'check', occurredAt: new Date().toISOString(), payload: {}, deliveryId: `${entity}-d1` });

/** A canary run that ended, and its live shadow, holding. */
async function runWithShadow(gate: ReturnType<typeof supervisedGate>, entity: string) {
  const answer = await gate.admit(ping(entity));
  assert.equal((await awaitRun(env.client, answer)).terminalReason, 'success');
  const shadow = env.client.workflow.getHandle(`shadow/live/${answer.runKey}`);
  await eventually(
    () => shadow.query(statusQuery).catch(() => undefined),
    (s) => s?.phase === 'hold',
    20_000,
    'the live shadow holding',
  );
  return shadow;
}

/** The result, or a failure naming what did not end in time. */
async function endsWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

test("a trip that stops agent X (onTrip: cancel) stops X's running live shadows", async () => {
  const taskQueue = unique('shadow-trip');
  const policy = testPolicy({ storm: { fleetPerMinute: 3, rationale: 'test: a storm is more than 3 wakes a minute' }, onTrip: { canary: 'cancel' } });
  const agents = shadowedCanary();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const shadow = await runWithShadow(gate, unique('trip'));
    // Three more wakes: four in a minute, over the threshold of 3.
    await Promise.all([1, 2, 3].map((i) => gate.admit(ping(unique(`trip-storm-${i}`)))));
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'halted',
      15_000,
      'the storm trip',
    );
    const r = (await endsWithin(shadow.result(), 20_000, 'the live shadow of the stopped agent')) as RunResult;
    assert.equal(r.terminalReason, 'cancelled', r.summary);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('`wakegate drain` does not wait for live shadows: drained at once, the shadows left counted apart', async () => {
  const taskQueue = unique('shadow-drain');
  const policy = testPolicy();
  const agents = shadowedCanary();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const shadow = await runWithShadow(gate, unique('drain'));
    const t0 = Date.now();
    const drained = await runCli(['drain', '--who', 'sam', '--reason', 'deploy', '--timeout', '15'], {
      TEMPORAL_ADDRESS: env.server.address,
      WAKEGATE_TASK_QUEUE: taskQueue,
    });
    assert.equal(drained.code, 0, drained.stderr);
    assert.equal(drained.json.drained, true);
    assert.equal(drained.json.live, 0);
    assert.equal(drained.json.liveShadows, 1);
    assert.match(drained.stderr, /1 live shadow run\(s\) not waited for/);
    assert.ok(Date.now() - t0 < 10_000, `drained in ${Date.now() - t0} ms`);
    assert.equal((await shadow.describe()).status.name, 'RUNNING', 'the shadow was left to run: a drain stops nothing');
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});
