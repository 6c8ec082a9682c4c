import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createWakegate } from 'wakegate';
import { installTestRuntime, startTimeSkipping } from 'wakegate/testing';
import { deployment } from '../src/deployment';

installTestRuntime(); // the SDK's warnings and errors only, less the test server's notices
/*
 * The agent on Temporal's time-skipping test server (a real server whose clock jumps ahead when only
 * timers are pending): a ticket event passes the gate, the run reads the ticket and labels it once.
 */
let env: TestWorkflowEnvironment;
before(async () => {
  env = await startTimeSkipping();
});
after(async () => {
  await env?.teardown();
});

test('a new ticket is labelled once', async () => {
  const labelsFile = path.join(mkdtempSync(path.join(tmpdir(), 'triage-')), 'labels.jsonl');
  const app = createWakegate(deployment({ labelsFile }));
  const taskQueue = 'triage-time-skipping';
  const worker = await app.worker({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue });
  const result = await worker.runUntil(async () => {
    const gate = app.gate(env.client, taskQueue);
    try {
      const answer = await gate.admit({
        source: 'tickets',
        entity: 'T-1',
        type: 'opened',
        occurredAt: '2026-12-01T09:00:00Z',
        payload: { ticketId: 'T-1', title: 'The export button does nothing' },
      });
      assert.equal(answer.decision, 'started');
      return await app.awaitRun(env.client, answer);
    } finally {
      await gate.close();
    }
  });
  assert.equal(result.terminalReason, 'success', result.summary);
  const lines = readFileSync(labelsFile, 'utf8').trim().split('\n');
  assert.equal(lines.length, 1);
  assert.deepEqual(JSON.parse(lines[0]!), { effectKey: JSON.parse(lines[0]!).effectKey, ticketId: 'T-1', label: 'bug' });
});
