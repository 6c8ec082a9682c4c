import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coalescing, failingCanary } from '../helpers/agents';
import { Gate } from '../../src/gate/gate';
import type { RunResult } from '../../src/core/run-types';
import { RUN_DELIVERY_IDS_KEPT } from '../../src/core/delivery-ids';
import { statusQuery } from '../../src/core/messages';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { registryOf, activitiesOf } from '../helpers/app';
import { SupervisorLink } from '../../src/supervisor/link';
import { defaultSupervisorPolicy } from '../../src/supervisor/policy';

const env = useDevEnv();

const gateFor = (taskQueue: string) => new Gate({ client: env.client, taskQueue, registry: registryOf() });
const ping = (entity: string, payload: Record<string, unknown> = {}, deliveryId?: string) => ({
  source: 'ping',
  entity,
  type: 'check',
  occurredAt: '2026-12-02T14:05:00Z',
  payload,
  ...(deliveryId ? { deliveryId } : {}),
});
const executions = (workflowId: string) => env.client.workflow.count(`WorkflowId = "${workflowId}"`).then((c) => c.count);

describe('the gate on the real dev server', () => {
  test('200 concurrent deliveries of one logical event start exactly one execution', async () => {
    const taskQueue = unique('gate-storm');
    const shared = gateFor(taskQueue);
    const entity = unique('storm');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      // Half go through one gate (which shares one resolution among concurrent duplicates), half
      // through a gate each, as 100 separate ingress processes would: there only Temporal's
      // workflow-ID uniqueness stands between them and a second run.
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? shared : gateFor(taskQueue)).admit(ping(entity, { holdMs: 1500 }, `delivery-${i}`))),
      );
      const decisions = answers.map((a) => a.decision);
      assert.ok(
        decisions.every((d) => d === 'started' || d === 'in_progress' || d === 'completed'),
        JSON.stringify(decisions),
      );
      assert.equal(decisions.filter((d) => d === 'started').length, 1);
      assert.equal(new Set(answers.map((a) => a.runKey)).size, 1);
      assert.equal(new Set(answers.map((a) => a.runId)).size, 1);
      const workflowId = answers[0]!.runKey;
      const result = (await env.client.workflow.getHandle(workflowId).result()) as RunResult;
      assert.equal(result.terminalReason, 'success');
      // Every delivery that was answered while the run was open is counted on it; it keeps the first ids and the newest.
      const open = answers.filter((x) => x.decision !== 'completed');
      assert.ok(result.deliveryCount >= open.length, `${result.deliveryCount} deliveries counted, ${open.length} answered while open`);
      assert.ok(result.deliveryIds.length <= RUN_DELIVERY_IDS_KEPT, `${result.deliveryIds.length} ids kept`);
      assert.ok(result.deliveryIds.includes(answers.find((a) => a.decision === 'started')!.deliveryId!), 'the first delivery kept');
      assert.equal(
        await eventually(
          () => executions(workflowId),
          (n) => n >= 1,
        ),
        1,
      );
      // Visibility is eventually consistent: give it time to show a second run, if there were one.
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(await executions(workflowId), 1);
    });
  });

  test('redelivery after completion returns the stored result and starts nothing', async () => {
    const taskQueue = unique('gate-done');
    const gate = gateFor(taskQueue);
    const entity = unique('done');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await gate.admit(ping(entity, {}, 'a'));
      assert.equal(first.decision, 'started');
      const stored = await env.client.workflow.getHandle(first.runKey).result();
      const again = await gate.admit(ping(entity, {}, 'b'));
      assert.equal(again.decision, 'completed');
      assert.equal(again.runId, first.runId);
      assert.deepEqual(again.result, stored);
      assert.equal(again.result?.terminalReason, 'success');
      assert.equal(
        await eventually(
          () => executions(first.runKey),
          (n) => n >= 1,
        ),
        1,
      );
    });
  });

  test('redelivery after a failed run starts a new run', async () => {
    const taskQueue = unique('gate-failed');
    const gate = gateFor(taskQueue);
    const entity = unique('failed');
    // A fake of the outside world that fails for good: the run fails.
    const failing = activitiesOf({ agents: failingCanary() });
    const first = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const a = await gate.admit(ping(entity, {}, 'first'));
        await assert.rejects(env.client.workflow.getHandle(a.runKey).result());
        return a;
      },
      { activities: failing },
    );
    assert.equal(first.decision, 'started');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const second = await gate.admit(ping(entity, {}, 'second'));
      assert.equal(second.decision, 'started');
      assert.notEqual(second.runId, first.runId);
      const result = (await env.client.workflow.getHandle(second.runKey, second.runId).result()) as RunResult;
      assert.equal(result.terminalReason, 'success');
      assert.equal(
        await eventually(
          () => executions(first.runKey),
          (n) => n >= 2,
        ),
        2,
      );
    });
  });

  test('the same key with different inputs is refused and starts nothing', async () => {
    const taskQueue = unique('gate-mismatch');
    const gate = gateFor(taskQueue);
    const entity = unique('mismatch');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await gate.admit(ping(entity, { holdMs: 1000, note: 'original' }));
      assert.equal(first.decision, 'started');
      const whileOpen = await gate.admit(ping(entity, { holdMs: 1000, note: 'changed' }, 'x'));
      assert.equal(whileOpen.decision, 'mismatch');
      assert.match(whileOpen.message ?? '', /different inputs/);
      const result = (await env.client.workflow.getHandle(first.runKey).result()) as RunResult;
      assert.deepEqual(result.deliveryIds, [], 'a refused delivery is not recorded on the run');
      const afterDone = await gate.admit(ping(entity, { holdMs: 1000, note: 'changed' }));
      assert.equal(afterDone.decision, 'mismatch');
      assert.equal(afterDone.result, undefined);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await executions(first.runKey), 1);
    });
  });

  test('runs carry the trigger key, delivery ids and terminal reason as search attributes', async () => {
    const taskQueue = unique('gate-sa');
    const gate = gateFor(taskQueue);
    const entity = unique('sa');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await gate.admit(ping(entity, { holdMs: 1000 }, 'sa-1'));
      await gate.admit(ping(entity, { holdMs: 1000 }, 'sa-2'));
      await env.client.workflow.getHandle(first.runKey).result();
      const query = `WakeEventKey = "${first.eventKey}" AND WakeEntity = "${entity}" AND WakeTerminalReason = "success" AND WakeDeliveryIds = "sa-2"`;
      const found = await eventually(
        async () => {
          const rows = [];
          for await (const wf of env.client.workflow.list({ query })) rows.push(wf);
          return rows;
        },
        (rows) => rows.length === 1,
        15_000,
        'the run to be visible by its search attributes',
      );
      assert.equal(found[0]!.workflowId, first.runKey);
    });
  });

  test('a cancelled run ends `cancelled`, and a redelivery is answered with that outcome', async () => {
    const taskQueue = unique('gate-cancel');
    const gate = gateFor(taskQueue);
    const entity = unique('cancel');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await gate.admit(ping(entity, { holdMs: 60_000 }));
      const handle = env.client.workflow.getHandle(first.runKey);
      await eventually(
        () => handle.query(statusQuery),
        (s) => s.phase === 'hold',
        15_000,
        'the hold',
      );
      await handle.cancel();
      const result = (await handle.result()) as RunResult;
      assert.equal(result.terminalReason, 'cancelled');
      const again = await gate.admit(ping(entity, { holdMs: 60_000 }));
      assert.equal(again.decision, 'completed');
      assert.equal(again.result?.terminalReason, 'cancelled');
    });
  });

  test('the storm breaker weighs the wakes that start a run: a burst on one wake key counts once, a redelivery not at all', async () => {
    const taskQueue = unique('gate-storm-wakes');
    const agents = coalescing('canary', { debouncePeriodMs: 1000, maxWaitMs: 20_000 });
    // The link's counts as the gate notes them (nothing is sent: the supervisor is not what is under test).
    const noted: string[] = [];
    const link = new (class extends SupervisorLink {
      override noteWake(agent: string): void {
        noted.push(agent);
      }
    })({ client: env.client, taskQueue, policy: defaultSupervisorPolicy });
    const coalescingGate = new Gate({ client: env.client, taskQueue, registry: registryOf(agents), supervisor: link, decisionWaitMs: 20_000 });
    const oneCallGate = new Gate({ client: env.client, taskQueue, registry: registryOf(), supervisor: link });
    const entity = unique('storm-wakes');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        // Ten events about one wake key at once: one opens the batch, nine join it.
        const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => coalescingGate.admit({ ...ping(entity), type: `edit-${i}` })));
        const decisions = burst.map((a) => a.decision).sort();
        assert.deepEqual(decisions, [
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'coalesced',
          'started',
        ]);
        assert.equal(noted.length, 1, 'the burst is one storm wake: its run');
        const again = await coalescingGate.admit({ ...ping(entity), type: 'edit-0' });
        assert.equal(again.decision, 'in_progress');
        assert.equal(noted.length, 1, 'a redelivery is none');
        // The one-call path: the start counts, its redelivery does not.
        const plainEntity = unique('storm-wakes-plain');
        assert.equal((await oneCallGate.admit(ping(plainEntity, { holdMs: 1000 }))).decision, 'started');
        assert.notEqual((await oneCallGate.admit(ping(plainEntity, { holdMs: 1000 }))).decision, 'started');
        assert.deepEqual(noted, ['canary', 'canary']);
      },
      { activities: activitiesOf({ agents }) },
    );
    await link.close();
  });
});
