import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RunResult } from '../../src/core/run-types';
import { askResident, residentSocket } from '../../src/cli/resident-link';
import { residentSettings } from '../../src/config/resident';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { runCli, runCliRaw } from '../helpers/cli';

const ROOT = path.resolve(__dirname, '../..');

const env = useDevEnv();

interface Answer {
  line: number;
  decision?: string;
  runKey?: string;
  runId?: string;
  error?: { code: string; message: string };
}

/** `wakegate emit --file ...` as a subprocess: its answer lines, exit code and stderr. */
async function emitFile(args: string[], cliEnv: Record<string, string>, stdin?: string): Promise<{ code: number; answers: Answer[]; stderr: string }> {
  const { code, stdout, stderr } = await runCliRaw(['emit', '--file', ...args], cliEnv, 120_000, stdin);
  try {
    return {
      code,
      answers: stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Answer),
      stderr,
    };
  } catch {
    throw new Error(`stdout is not JSON lines (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
  }
}

describe('wakegate emit --file', () => {
  test('one answer line per event in order; a bad line named by its number, the others admitted; the same file again is deduplicated', async () => {
    const taskQueue = unique('emit-file');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('emit-file');
    const ev = (i: number, extra: object = {}) =>
      JSON.stringify({ source: 'ping', entity: `${entity}-${i}`, type: 'check', occurredAt: '2026-12-02T14:05:00Z', deliveryId: `f-${i}`, ...extra });
    const lines = [
      ev(1),
      '{"source": "ping", "entity": ',
      ev(2, { payload: { note: 'x' } }),
      '',
      ev(3, { payload: { holdMs: 'long' } }),
      ev(4, { agent: 'canary' }),
    ];
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'wakegate-emit-file-')), 'events.ndjson');
    await writeFile(file, `${lines.join('\n')}\n`);

    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await emitFile([file], cliEnv);
      assert.equal(first.code, 2, `bad lines exit 2: ${first.stderr}`);
      assert.deepEqual(
        first.answers.map((a) => [a.line, a.decision ?? a.error?.code]),
        [
          [1, 'started'],
          [2, 'invalid_event'],
          [3, 'started'],
          [5, 'invalid_payload'],
          [6, 'started'],
        ],
      );
      assert.match(first.answers[1]!.error!.message, /^line 2: not valid JSON/);
      assert.match(first.answers[3]!.error!.message, /payload\.holdMs/);
      assert.equal(first.answers[0]!.runKey, `canary@ping/check/${entity}-1/2026-12-02T14:00:00Z`);
      assert.match(first.stderr, /5 events: 3 admitted, 2 bad \(lines 2, 5\); exit 2/);

      const admitted = first.answers.filter((a) => a.decision === 'started');
      const results = await Promise.all(admitted.map((a) => env.client.workflow.getHandle(a.runKey!).result() as Promise<RunResult>));
      assert.deepEqual(
        results.map((r) => r.terminalReason),
        ['success', 'success', 'success'],
      );

      // The same file again, on standard input this time: the same keys, answered from the runs the first pass started.
      const again = await emitFile(['-'], cliEnv, await readFile(file, 'utf8'));
      assert.equal(again.code, 2);
      assert.deepEqual(
        again.answers.map((a) => [a.line, a.decision ?? a.error?.code]),
        [
          [1, 'completed'],
          [2, 'invalid_event'],
          [3, 'completed'],
          [5, 'invalid_payload'],
          [6, 'completed'],
        ],
      );
      assert.deepEqual(
        again.answers.filter((a) => a.decision).map((a) => [a.runKey, a.runId]),
        admitted.map((a) => [a.runKey, a.runId]),
      );
    });
  });

  test('an unreadable file or a single event flag with --file exits 2 before anything is sent', async () => {
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: unique('emit-file-usage') };
    const missing = await runCli(['emit', '--file', '/nonexistent/events.ndjson'], cliEnv);
    assert.equal(missing.code, 2);
    assert.match((missing.json.error as { message: string }).message, /cannot read the file/);
    const mixed = await runCli(['emit', '--file', '-', '--source', 'ping'], cliEnv, 60_000, '');
    assert.equal(mixed.code, 2);
    assert.match((mixed.json.error as { message: string }).message, /drop --source/);
  });
});

describe('wakegate emit through a resident process', () => {
  test('the first emit starts one; the next is answered by it, with the same keys and dedup as in its own process', async () => {
    const taskQueue = unique('resident');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('resident');
    const base = ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00Z'];
    const socket = residentSocket(path.join(ROOT, 'lib', 'cli', 'main.js'), residentSettings({ ...process.env, WAKEGATE_LOG_LEVEL: 'warn', ...cliEnv }), ROOT);
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await runCli(base, cliEnv);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.json.decision, 'started');
      // It started a resident process for this directory and environment, which answers on its socket.
      await eventually(
        () => askResident(socket, [...base.slice(0, 1), '--source', 'nope', ...base.slice(3)]),
        (reply) => reply !== undefined,
        30_000,
        'the resident process answers',
      );
      const second = await runCli([...base, '--delivery-id', 'r-2'], cliEnv);
      assert.equal(second.code, 0, second.stderr);
      assert.ok(['in_progress', 'completed'].includes(String(second.json.decision)), String(second.json.decision));
      assert.equal(second.json.runKey, first.json.runKey);
      assert.equal(second.json.runId, first.json.runId);

      const refused = await askResident(socket, ['emit', '--source', 'nope', '--entity', entity, '--type', 'check']);
      assert.ok(refused && 'code' in refused);
      assert.equal(refused.code, 2);
      assert.match(refused.stdout, /"code": "unknown_source"/);
      // What it cannot answer (here --wait) goes back to the caller, which runs it itself.
      assert.deepEqual(await askResident(socket, [...base, '--wait']), { fallback: 'not a call for a resident process' });
    });
  });

  test('a file of the deployment changed: the call goes back to its caller and the resident process goes', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'wakegate-resident-app-'));
    const app = path.join(dir, 'app.ts');
    await writeFile(app, `export { default } from ${JSON.stringify(path.join(ROOT, 'wakegate.config'))};\n`);
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: unique('resident-stale'), WAKEGATE_APP: app };
    const base = ['emit', '--source', 'ping', '--entity', unique('resident-stale'), '--type', 'check', '--occurred-at', '2026-12-02T14:05:00Z'];
    const socket = residentSocket(path.join(ROOT, 'lib', 'cli', 'main.js'), residentSettings({ ...process.env, WAKEGATE_LOG_LEVEL: 'warn', ...cliEnv }), ROOT);
    const first = await runCli(base, cliEnv);
    assert.equal(first.code, 0, first.stderr);
    await eventually(
      () => askResident(socket, base),
      (reply) => reply !== undefined && 'code' in reply,
      30_000,
      'the resident process answers',
    );
    const later = new Date(Date.now() + 5_000);
    await utimes(app, later, later);
    assert.deepEqual(await askResident(socket, base), { fallback: 'the deployment changed since this resident process started' });
    await eventually(
      () => askResident(socket, base),
      (reply) => reply === undefined,
      15_000,
      'the resident process is gone',
    );
    // The caller runs it itself, as the same event.
    const again = await runCli(base, cliEnv);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.runKey, first.json.runKey);
  });
});
