import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type * as PluginModule from '../../src/runtime/plugin';

/*
 * Where WakegatePlugin writes the workflows entry that re-exports a team's workflows and wakegate's,
 * with another local user's traps laid in a shared temporary folder (TMPDIR, set here before the
 * plugin is loaded): a planted `node_modules` there, a symlink at the old folder's name, and stale
 * entries. No server: the bundle is built and read, not run.
 */

const made: string[] = [];
const folder = (prefix: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
};
const shared = folder('wakegate-shared-tmp-');
process.env.TMPDIR = shared;
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
const PLANTED = 'planted-worker-interface-46';
for (const root of [shared, path.join(shared, 'wakegate-workflows')]) {
  const pkg = path.join(root, 'node_modules', '@temporalio', 'workflow');
  mkdirSync(path.join(pkg, 'lib'), { recursive: true });
  writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: '@temporalio/workflow', version: '1.24.0', main: 'lib/index.js' }));
  writeFileSync(path.join(pkg, 'lib', 'worker-interface.js'), `module.exports = { marker: '${PLANTED}' };\n`);
  writeFileSync(path.join(pkg, 'lib', 'index.js'), `module.exports = { marker: '${PLANTED}' };\n`);
}
// An entry folder another run left behind two days ago, and one a live worker made a minute ago.
const stale = path.join(shared, 'wakegate-workflows-stale1');
const fresh = path.join(shared, 'wakegate-workflows-fresh1');
for (const dir of [stale, fresh]) mkdirSync(dir, { mode: 0o700 });
const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
utimesSync(stale, twoDaysAgo, twoDaysAgo);

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after TMPDIR is set
const { composeWorkflows, WakegatePlugin } = require('../../src/runtime/plugin') as typeof PluginModule;

const own = require.resolve('../fixtures/own-workflows');

describe("the plugin's composed workflows entry", () => {
  test('is in a folder of its own, mode 0700, not a predictable shared one', () => {
    const entry = composeWorkflows(own);
    const dir = path.dirname(entry);
    assert.notEqual(dir, path.join(shared, 'wakegate-workflows'));
    assert.ok(lstatSync(dir).isDirectory() && !lstatSync(dir).isSymbolicLink());
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(dir).uid, process.getuid!());
    // Written aside under a random name, renamed into place: nothing half written is left beside it.
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
    );
  });

  test("its bundle takes Temporal's workflow package from the project, never from a node_modules planted in the shared folder", async () => {
    const plugin = new WakegatePlugin(() => ({}));
    const bundle = await bundleWorkflowCode({ workflowsPath: own, plugins: [plugin], logger: new DefaultLogger('WARN') });
    assert.ok(bundle.code.includes('greetWorkflow'), "the team's workflow is in it");
    assert.ok(bundle.code.includes('coalescerWorkflow'), "wakegate's are in it");
    assert.ok(!bundle.code.includes(PLANTED), 'the planted worker-interface was bundled');
  });

  test('stale entry folders of past processes are cleaned; a recent one is left to its worker', () => {
    composeWorkflows(own);
    assert.equal(existsSync(stale), false);
    assert.equal(existsSync(fresh), true);
  });

  test("a symlink planted at the old folder's name is never written through", async () => {
    const other = folder('wakegate-shared-tmp-');
    const victim = folder('wakegate-victim-');
    symlinkSync(victim, path.join(other, 'wakegate-workflows'));
    const script = `require(${JSON.stringify(require.resolve('../../src/runtime/plugin'))}).composeWorkflows(${JSON.stringify(own)});`;
    await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { env: { ...process.env, TMPDIR: other } });
    assert.deepEqual(readdirSync(victim), []);
  });

  test('two workers side by side compose the same pair each in its own folder, and each removes its own on exit', async () => {
    const script = `const p = require(${JSON.stringify(require.resolve('../../src/runtime/plugin'))}); const f = p.composeWorkflows(${JSON.stringify(own)}); require('node:fs').accessSync(f); process.stdout.write(f);`;
    const run = () => promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { env: { ...process.env, TMPDIR: shared } });
    const [a, b] = await Promise.all([run(), run()]);
    assert.notEqual(path.dirname(a.stdout), path.dirname(b.stdout));
    assert.equal(existsSync(path.dirname(a.stdout)), false);
    assert.equal(existsSync(path.dirname(b.stdout)), false);
  });
});
