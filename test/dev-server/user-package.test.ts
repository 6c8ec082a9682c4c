import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RunResult } from '../../src/core/run-types';
import { startDevEnv, unique, type DevEnv } from '../helpers/env';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

/*
 * A user's own package outside this checkout (test/fixtures/user-package, copied to a temporary
 * folder) depends on wakegate with "file:<path>", installs it with npm (offline: a file dependency
 * is a link), defines an agent, a tool with typed arguments, an effect and a model choice against
 * 'wakegate' alone, and runs it through createWakegate on a real dev server in its own process.
 */

let env: DevEnv;
let dir: string;
before(async () => {
  env = await startDevEnv();
  dir = mkdtempSync(path.join(tmpdir(), 'wakegate-user-'));
  cpSync(path.join(__dirname, '..', 'fixtures', 'user-package'), dir, { recursive: true });
  const pkg = path.join(dir, 'package.json');
  writeFileSync(pkg, readFileSync(pkg, 'utf8').replace('WAKEGATE_PATH', ROOT));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await env?.teardown();
});

describe('a user package that depends on wakegate by path', () => {
  test('npm installs it; its own agent, tool, effect and model run behind the gate; a redelivery is answered from the run', async () => {
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund'], { cwd: dir });
    const taskQueue = unique('user-package');
    const { stdout } = await run(process.execPath, ['--import', require.resolve('tsx'), 'main.ts'], {
      cwd: dir,
      env: { ...process.env, TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue, WAKEGATE_LOG_LEVEL: 'warn' },
      timeout: 120_000,
    });
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { first: string; again: string; result: RunResult };
    assert.equal(out.first, 'started');
    assert.equal(out.again, 'completed', 'the same release delivered again is answered from the run');
    assert.equal(out.result.terminalReason, 'success', out.result.summary);
    assert.equal(out.result.agent, 'release-notes');
    // The tool got its typed argument (the version, which the model took from the event) and the effect ran once.
    const notes = readFileSync(path.join(dir, 'release-notes.log'), 'utf8').trim().split('\n');
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, /#append_note@0 left-pad: left-pad 2\.0\.0: faster start$/);
    const committed = (out.result.output as { committed: { name: string; outcome: string }[] }).committed;
    assert.deepEqual(
      committed.map((e) => [e.name, e.outcome]),
      [['append_note', 'applied']],
    );
  });
});
