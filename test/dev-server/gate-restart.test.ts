import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Gate } from '../../src/gate/gate';
import type { RunResult } from '../../src/core/run-types';
import { useDevEnv, unique, withWorker } from '../helpers/env';
import { registryOf } from '../helpers/app';

const env = useDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-restart-')), 'dev.db') });

test('dedup survives a restart of the dev server: the stored result is still the answer', async () => {
  const taskQueue = unique('restart');
  const entity = unique('restart');
  const event = (deliveryId: string) => ({ source: 'ping', entity, type: 'check', occurredAt: '2026-12-02T14:05:00Z', payload: { note: 'x' }, deliveryId });

  const first = await withWorker(env.nativeConnection, taskQueue, async () => {
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf() });
    const a = await gate.admit(event('before'));
    await env.client.workflow.getHandle(a.runKey).result();
    await gate.close(); // nothing of it left on the connection the restart closes
    return a;
  });
  assert.equal(first.decision, 'started');

  await env.server.stop();
  // While Temporal is down the gate does not answer 2xx-like decisions: it fails, and the caller
  // (a webhook sender, a queue) keeps the event to redeliver.
  const downGate = new Gate({ client: env.client, taskQueue, registry: registryOf() });
  await assert.rejects(env.client.withDeadline(Date.now() + 5000, () => downGate.admit(event('while-down'))));
  await downGate.close();

  await env.server.up();
  await env.reconnect();
  const afterGate = new Gate({ client: env.client, taskQueue, registry: registryOf() });
  const again = await afterGate.admit(event('after'));
  await afterGate.close();
  assert.equal(again.decision, 'completed');
  assert.equal(again.runId, first.runId);
  assert.equal((again.result as RunResult).terminalReason, 'success');
  assert.deepEqual((again.result as RunResult).deliveryIds, ['before']);
});
