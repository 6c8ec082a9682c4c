import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RunResult } from '../../src/core/run-types';
import { startDevEnv, unique, type DevEnv } from '../helpers/env';
import { userPackageLock } from '../helpers/user-package';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

/*
 * wakegate as a user gets it: `npm pack` builds the package (lib/: JS, .d.ts, source maps) and makes
 * its tarball; a user's own package outside this checkout (test/fixtures/user-package*, copied to a
 * temporary folder) depends on that tarball, installs it with `npm ci --offline` (from the local cache, under a lock made from this checkout's),
 * defines an agent, a tool with typed arguments, an effect and a model choice against 'wakegate'
 * alone, and runs it through createWakegate on a real dev server in its own process.
 */

let env: DevEnv;
let work: string;
let tarball: string;
before(async () => {
  env = await startDevEnv();
  work = mkdtempSync(path.join(tmpdir(), 'wakegate-user-'));
  const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', work], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 });
  tarball = path.join(work, stdout.trim().split('\n').at(-1)!);
});
after(async () => {
  rmSync(work, { recursive: true, force: true });
  await env?.teardown();
});

/** A fixture copied beside the tarball, installed offline. */
async function installed(fixture: string): Promise<string> {
  const dir = path.join(work, fixture);
  cpSync(path.join(__dirname, '..', 'fixtures', fixture), dir, { recursive: true });
  const pkg = path.join(dir, 'package.json');
  writeFileSync(pkg, readFileSync(pkg, 'utf8').replace('WAKEGATE_TARBALL', tarball));
  const user = JSON.parse(readFileSync(pkg, 'utf8')) as { name: string; version: string };
  writeFileSync(path.join(dir, 'package-lock.json'), userPackageLock(ROOT, tarball, user));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir, timeout: 300_000 });
  return dir;
}

/** Runs the user's process and checks what a user expects: a run, a redelivery answered from it, one effect. */
async function runsBehindTheGate(dir: string, args: string[]): Promise<void> {
  const { stdout } = await run(process.execPath, args, {
    cwd: dir,
    env: { ...process.env, TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: unique('user-package'), WAKEGATE_LOG_LEVEL: 'warn', NODE_OPTIONS: '' },
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
}

describe('a user package that installs the packed tarball', () => {
  test('the tarball ships compiled JS with types and source maps, and no tests or tooling', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.split('\n').filter(Boolean);
    for (const f of [
      'package/lib/src/index.js',
      'package/lib/src/index.d.ts',
      'package/lib/src/index.js.map',
      'package/lib/workflows/index.js',
      'package/lib/cli/main.js',
      'package/bin/wakegate.js',
    ]) {
      assert.ok(files.includes(f), `${f} is not in the tarball`);
    }
    assert.deepEqual(
      files.filter((f) => /^package\/(test|tools|examples|docs)\//.test(f)),
      [],
    );
  });

  test('plain JavaScript, node alone (no tsx, no TypeScript installed): its agent runs behind the gate; a redelivery is answered from the run', async () => {
    const dir = await installed('user-package-js');
    for (const absent of ['tsx', 'typescript']) assert.ok(!existsSync(path.join(dir, 'node_modules', absent)), `${absent} was installed`);
    // Temporal's packages came in as peer dependencies, one version.
    assert.ok(existsSync(path.join(dir, 'node_modules', '@temporalio', 'worker', 'package.json')));
    await runsBehindTheGate(dir, ['main.js']);
  });

  test('TypeScript with the user’s own loader (tsx): its agent, tool, effect and model run behind the gate', async () => {
    const dir = await installed('user-package');
    await runsBehindTheGate(dir, ['--import', require.resolve('tsx'), 'main.ts']);
  });
});
