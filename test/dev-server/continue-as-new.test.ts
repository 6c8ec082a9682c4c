import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { awaitRun } from '../../src/run/await-run';
import type { Standins } from '../../tools/standins';
import { actOnSupervisor } from '../../src/supervisor/actions';
import { statusQuery } from '../../src/core/messages';
import { holdNudgeSignal, wakesSignal } from '../../src/core/supervisor-messages';
import { oneCallAgents } from '../helpers/agents';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { standinOutside, startOutside } from '../helpers/outside';
import {
  closeGates,
  pokeUntilContinued,
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

/*
 * Continue-as-new where a person's halt must survive it, on a dev server of its own where Temporal
 * suggests continue-as-new after 60 history events (in production: thousands), so a handful of
 * signals or re-checks reach it: the supervisor keeps its halt in its memo across runs, and a run
 * held for long continues as new and goes on waiting.
 */

const env = useDevEnv({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } });
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

test('the supervisor continuing as new keeps its halt in its memo: no read between two of its runs says armed', async () => {
  const taskQueue = unique('sup-can');
  const policy = testPolicy();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, {
    supervisor: policy,
    pager: pager.adapter,
    agents: oneCallAgents(),
    outside: standinOutside(standins),
  });
  try {
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'sam', reason: 'test: hold everything' })).ok);
    const handle = supervisorHandle(env.client, taskQueue);
    // Read the memo as every gate and held run does (describe), as fast as it answers, while wake
    // counts (signals) push the supervisor past 60 events again and again.
    let polling = true;
    const notHalted: string[] = [];
    let reads = 0;
    const poller = (async () => {
      while (polling) {
        const d = await handle.describe();
        reads += 1;
        const memo = d.memo?.supervisor as { mode?: string } | undefined;
        if (memo?.mode !== 'halted') notHalted.push(`${d.runId}: ${JSON.stringify(memo)}`);
      }
    })();
    const runIds = [(await handle.describe()).runId];
    for (let i = 0; i < 3; i++) {
      runIds.push(
        await pokeUntilContinued(
          handle,
          runIds[runIds.length - 1]!,
          () => handle.signal(wakesSignal, { counts: { canary: 1 } }),
          20,
          'the supervisor continuing as new',
          45_000,
        ),
      );
    }
    polling = false;
    await poller;
    assert.equal(new Set(runIds).size, 4, 'the supervisor continued as new three times');
    assert.deepEqual(notHalted, [], `${notHalted.length} of ${reads} reads did not say halted`);
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('a run held for long continues as new and goes on waiting: the same hold and deliveries, the fingerprint still compared, released and run once', async () => {
  const taskQueue = unique('held-can');
  const policy = testPolicy();
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'halt', who: 'sam', reason: 'test: hold everything' })).ok);
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    const event = {
      source: 'ping',
      entity: unique('long-hold'),
      type: 'check',
      occurredAt: new Date(Date.now() - 30_000).toISOString(),
      payload: { note: 'a' },
    };
    const a = await gate.admit({ ...event, deliveryId: 'd1' });
    assert.equal(a.decision, 'held');
    const handle = env.client.workflow.getHandle(a.runKey);
    const before = await eventually(
      () => handle.query(statusQuery),
      (s) => s.phase === 'held',
      20_000,
      'held',
    );
    const firstRunId = (await handle.describe()).runId;
    assert.equal((await gate.admit({ ...event, deliveryId: 'd2' })).runKey, a.runKey);

    // Each nudge makes the run re-check (about ten history events): a few of them pass the threshold.
    await pokeUntilContinued(handle, firstRunId, () => handle.signal(holdNudgeSignal), 300, 'the held run continuing as new');
    assert.equal((await env.client.workflow.getHandle(a.runKey, firstRunId).describe()).status.name, 'CONTINUED_AS_NEW');
    const afterCan = await eventually(
      () => handle.query(statusQuery),
      (s) => s.phase === 'held' && (s.held?.continuedAsNew ?? 0) >= 1,
      20_000,
      'held again in the next run',
    );
    assert.equal(afterCan.held?.heldAt, before.held?.heldAt, 'the same hold, from the same moment');
    assert.equal(afterCan.held?.hold, 'halted');
    assert.deepEqual(afterCan.deliveryIds, ['d1', 'd2']);
    // Its search attributes came along (the supervisor lists it as held), and its memo: the gate
    // still compares a redelivery's fingerprint with the run's.
    await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === 1,
      15_000,
      'listed as held',
    );
    // The run it continued from is closed (ContinuedAsNew) but did not end: the supervisor's error
    // rate does not count it (it has no terminal reason, which would read as failed).
    await new Promise((r) => setTimeout(r, 2500));
    assert.deepEqual((await supervisorStatus(env.client, taskQueue))?.recentRuns, {}, 'no closed run counted');
    assert.equal((await gate.admit({ ...event, payload: { note: 'b' }, deliveryId: 'd3' })).decision, 'mismatch');

    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'reset', who: 'sam', reason: 'test: back' })).ok);
    assert.ok((await actOnSupervisor(env.client, taskQueue, { kind: 'release', who: 'sam', reason: 'test: let it go' })).ok);
    const result = await awaitRun(env.client, a);
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(result.held?.releasedBy?.who, 'sam', JSON.stringify(result.held));
    assert.ok((result.held?.continuedAsNew ?? 0) >= 1);
    assert.deepEqual(result.deliveryIds, ['d1', 'd2']);
    const redelivered = await gate.admit({ ...event, deliveryId: 'd4' });
    assert.equal(redelivered.decision, 'completed', 'a redelivery gets the stored outcome');
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});

test('the supervisor continues as new while a page hangs: it does not wait out the pager, the halt stays published, and the page is sent again from the next run', async () => {
  const taskQueue = unique('sup-can-page');
  const hanging = await startHangingPager();
  const policy = testPolicy({
    storm: { fleetPerMinute: 3, rationale: 'test: a storm is more than 3 wakes a minute' },
    onTrip: { ...exampleApp.supervisorPolicy.onTrip },
  });
  const agents = oneCallAgents();
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: hanging.adapter, agents, outside: standinOutside(standins) });
  try {
    const gate = supervisedGate(env.client, taskQueue, policy, agents);
    const handle = supervisorHandle(env.client, taskQueue);
    await Promise.all(
      [0, 1, 2, 3].map((i) =>
        gate.admit({
          source: 'ping',
          entity: unique(`can-storm-${i}`),
          type: 'check',
          occurredAt: new Date(Date.now() - 30_000).toISOString(),
          payload: {},
          deliveryId: unique('d'),
        }),
      ),
    );
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'halted',
      15_000,
      'the storm trip',
    );
    await eventually(
      async () => hanging.arrived.length,
      (n) => n >= 1,
      10_000,
      'the page on the wire',
    );
    const firstRunId = (await handle.describe()).runId;
    // Wake counts push the supervisor past 60 events while its page hangs (each attempt times out after 5 s, twenty attempts).
    // (Without the rule it waits for its page, some twenty attempts of 5 s, and does not continue within this bound.)
    await pokeUntilContinued(
      handle,
      firstRunId,
      () => handle.signal(wakesSignal, { counts: { canary: 1 } }),
      20,
      'the supervisor continuing as new with its page still hanging',
      20_000,
    );
    const memo = (await handle.describe()).memo?.supervisor as { mode?: string } | undefined;
    assert.equal(memo?.mode, 'halted');
    const sentBefore = hanging.arrived.length;
    await eventually(
      async () => hanging.arrived.length,
      (n) => n > sentBefore,
      10_000,
      'the page sent again from the next run',
    );
  } finally {
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
    await hanging.close();
  }
});
