import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createWakegate } from 'wakegate';
import { DevServer, installTestRuntime } from 'wakegate/testing';
import { deployment } from '../src/deployment';

installTestRuntime(); // the SDK's warnings and errors only, less the test server's notices
/*
 * The agent on the real dev server (`temporal server start-dev`, what `npm start` runs): the same
 * ticket notice delivered twice (the tracker retried) runs once, and the retry is answered from the run.
 */
let server: DevServer;
before(async () => {
  server = await DevServer.start();
});
after(async () => {
  await server?.stop();
});

test('a redelivered ticket notice is answered from the run it started, and labels once', async () => {
  const labelsFile = path.join(mkdtempSync(path.join(tmpdir(), 'triage-')), 'labels.jsonl');
  const app = createWakegate(deployment({ labelsFile }));
  const taskQueue = 'triage-dev-server';
  const connection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  try {
    const worker = await app.worker({ connection, taskQueue, shutdownGraceTime: '1 second' });
    await worker.runUntil(async () => {
      const gate = app.gate(client, taskQueue);
      try {
        const notice = {
          source: 'tickets',
          entity: 'T-2',
          type: 'opened',
          occurredAt: '2026-12-01T10:00:00Z',
          payload: { ticketId: 'T-2', title: 'How do I export?' },
        };
        const first = await gate.admit({ ...notice, deliveryId: 'delivery-1' });
        assert.equal(first.decision, 'started');
        const result = await app.awaitRun(client, first);
        assert.equal(result.terminalReason, 'success', result.summary);
        const again = await gate.admit({ ...notice, deliveryId: 'delivery-2' });
        assert.equal(again.decision, 'completed');
        assert.equal(again.runKey, first.runKey);
      } finally {
        await gate.close();
      }
    });
    assert.equal(readFileSync(labelsFile, 'utf8').trim().split('\n').length, 1);
  } finally {
    await client.connection.close();
    await connection.close();
  }
});
