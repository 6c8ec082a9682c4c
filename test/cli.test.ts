import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../devserver/dev-server';
import { startDevEnv, unique, withWorker, type DevEnv } from './helpers/env';
import { runCli } from './helpers/cli';

let env: DevEnv;
before(async () => {
  env = await startDevEnv();
});
after(async () => {
  await env?.teardown();
});

describe('wakegate emit, run as a subprocess', () => {
  test('prints one JSON object per call with the decision; exit codes tell refusals apart', async () => {
    const taskQueue = unique('cli');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli');
    const base = ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00+01:00'];
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await runCli([...base, '--payload', '{"note":"hello"}', '--delivery-id', 'cli-1', '--wait'], cliEnv);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.json.decision, 'started');
      assert.equal(first.json.eventKey, `ping/check/${entity}/2026-12-02T13:00:00Z`);
      assert.equal(first.json.workflowId, `canary@${String(first.json.eventKey)}`);
      assert.equal(first.json.wakeKey, entity);
      assert.equal(typeof first.json.runId, 'string');
      assert.equal(first.json.terminalReason, 'success');
      assert.deepEqual((first.json.result as { deliveryIds: string[] }).deliveryIds, ['cli-1']);

      const again = await runCli([...base, '--payload', '{"note":"hello"}', '--delivery-id', 'cli-2'], cliEnv);
      assert.equal(again.code, 0);
      assert.equal(again.json.decision, 'completed');
      assert.equal(again.json.runId, first.json.runId);
      assert.equal((again.json.result as { terminalReason: string }).terminalReason, 'success');

      const mismatch = await runCli([...base, '--payload', '{"note":"changed"}'], cliEnv);
      assert.equal(mismatch.code, 3);
      assert.equal(mismatch.json.decision, 'mismatch');
      assert.match(mismatch.stderr, /different inputs/);
    });
  });

  test('bad input exits 2 with the field named, before any connection is made', async () => {
    const nowhere = { TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const bigFile = path.join(await mkdtemp(path.join(tmpdir(), 'wakegate-cli-')), 'big.json');
    await writeFile(bigFile, JSON.stringify({ blob: 'x'.repeat(300 * 1024) }));
    const cases: [string[], string, RegExp][] = [
      [['emit', '--source', 'nope', '--entity', 'e', '--type', 't'], 'unknown_source', /accepts .*ping/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '{nope'], 'usage', /--payload is not valid JSON/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '[1]'], 'usage', /JSON object/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '{"holdMs":"long"}'], 'invalid_payload', /payload\.holdMs/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', 'yesterday'], 'invalid_event', /occurredAt/],
      [['emit', '--source', 'ping', '--type', 't'], 'usage', /--entity/],
      // Deeper than any stack: refused by the gate's iterative depth check, not a crash (exit 1).
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`], 'payload_too_deep', /deeper than 32 levels/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', `@${bigFile}`], 'payload_too_large', /over the limit of 262144 bytes/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '@/nonexistent/payload.json'], 'usage', /cannot read the file/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', new Date(Date.now() + 3_600_000).toISOString()], 'occurred_at_out_of_range', /occurredAt .* lies in the future/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', '1999-12-31T23:00:00Z'], 'occurred_at_out_of_range', /occurredAt .* is before 2000/],
    ];
    for (const [args, code, message] of cases) {
      const run = await runCli(args, nowhere);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stdout}`);
      assert.equal((run.json.error as { code: string }).code, code);
      assert.match((run.json.error as { message: string }).message, message);
    }
  });

  test('a coalescing agent: decisions name the run and its state; `wakegate coalescer` shows the pending batch', async () => {
    const taskQueue = unique('cli-coalesce');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const campaign = unique('cli-campaign');
    // The reporter's own policy: a 10 s debounce, so the batch is still pending while the test looks.
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const change = await runCli(['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'config.changed', '--occurred-at', '2026-12-02T09:00:00Z', '--payload', '{"dashboards":["reach"]}', '--entity-version', '4'], cliEnv);
      assert.equal(change.code, 0, change.stderr);
      assert.equal(change.json.decision, 'started');
      assert.equal(change.json.wakeKey, campaign);
      assert.equal(change.json.runState, 'pending');
      assert.ok((change.json.startsInMs as number) > 5000, 'the reporter debounces for 10 s');
      const report = await runCli(['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'report.due', '--occurred-at', '2026-12-02T09:00:05Z'], cliEnv);
      assert.equal(report.json.decision, 'coalesced');
      assert.equal(report.json.workflowId, change.json.workflowId);
      const old = await runCli(['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'config.changed', '--occurred-at', '2026-12-02T08:59:00Z', '--payload', '{"dashboards":["spend"]}', '--entity-version', '3'], cliEnv);
      assert.equal(old.code, 0);
      assert.equal(old.json.decision, 'stale');
      assert.equal(old.json.newestVersion, 4);
      const shown = await runCli(['coalescer', 'campaign-reporter', campaign], cliEnv);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(shown.json.running, true);
      const pending = shown.json.pending as { runKey: string; events: { eventKey: string }[] };
      assert.equal(pending.runKey, change.json.workflowId);
      assert.deepEqual(pending.events.map((e) => e.eventKey), [change.json.eventKey, report.json.eventKey]);
      assert.deepEqual(shown.json.counts, { offered: 3, started: 1, coalesced: 1, skipped: 0, stale: 1, runs: 0 });
      const bad = await runCli(['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'config.changed', '--entity-version', 'v2'], cliEnv);
      assert.equal(bad.code, 2);
    });
  });

  test('--payload @file and --payload - read a payload past the 128 KiB a shell argument can carry; both are the same event', async () => {
    const taskQueue = unique('cli-payload');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli-payload');
    const payload = JSON.stringify({ note: 'big', blob: 'y'.repeat(200 * 1024) }, null, 2);
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'wakegate-cli-')), 'payload.json');
    await writeFile(file, payload);
    const base = ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00Z'];
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const fromFile = await runCli([...base, '--payload', `@${file}`, '--delivery-id', 'file', '--wait'], cliEnv);
      assert.equal(fromFile.code, 0, fromFile.stderr);
      assert.equal(fromFile.json.decision, 'started');
      assert.equal(fromFile.json.terminalReason, 'success');
      // The same bytes on stdin: the same fingerprint, so the stored outcome of the same run.
      const fromStdin = await runCli([...base, '--payload', '-', '--delivery-id', 'stdin'], cliEnv, 60_000, payload);
      assert.equal(fromStdin.code, 0, fromStdin.stderr);
      assert.equal(fromStdin.json.decision, 'completed');
      assert.equal(fromStdin.json.runId, fromFile.json.runId);
      assert.equal(fromStdin.json.fingerprint, fromFile.json.fingerprint);
    });
  });

  test('an unreachable Temporal exits 4 with where it looked and how to start one', async () => {
    const port = await freePort();
    const run = await runCli(['emit', '--source', 'ping', '--entity', 'e', '--type', 't'], {
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      WAKEGATE_CONNECT_TIMEOUT_MS: '1500',
    });
    assert.equal(run.code, 4);
    const err = run.json.error as { code: string; message: string };
    assert.equal(err.code, 'temporal_unreachable');
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.match(err.message, /temporal-dev\.sh up/);
  });
});
