import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const BIN = path.join(ROOT, 'bin', 'wakegate.js');
const BUILT = path.join(ROOT, 'lib', 'cli', 'main.js');

test('the compiled CLI is current: built after every file that went into it (the setup step rebuilt it)', () => {
  const built = statSync(BUILT).mtimeMs;
  const meta = JSON.parse(readFileSync(path.join(ROOT, 'lib', 'cli', 'meta.json'), 'utf8')) as { inputs: Record<string, unknown> };
  const inputs = Object.keys(meta.inputs);
  assert.ok(inputs.includes('src/cli/main.ts') && inputs.includes('src/cli/emit.ts'), inputs.join(', '));
  const newer = inputs.filter((rel) => statSync(path.join(ROOT, rel)).mtimeMs > built);
  assert.deepEqual(newer, [], 'sources newer than lib/cli/main.js');
});

test('without the compiled CLI, wakegate says how to build it (exit 1), not a stack trace', () => {
  const tree = mkdtempSync(path.join(tmpdir(), 'wakegate-bin-'));
  mkdirSync(path.join(tree, 'bin'));
  copyFileSync(BIN, path.join(tree, 'bin', 'wakegate.js'));
  const run = spawnSync(process.execPath, [path.join(tree, 'bin', 'wakegate.js'), '--help'], { cwd: tree, encoding: 'utf8' });
  assert.equal(run.status, 1);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /the compiled CLI is missing \(lib\/cli\/main\.js\)/);
  assert.match(run.stderr, /npm run build/);
});

test('--help, a usage error and a refused input answer without loading the Temporal client', () => {
  // A preload that reports every package the process loads from node_modules, on exit.
  const probe = path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-probe-')), 'probe.js');
  writeFileSync(
    probe,
    `const Module = require('node:module');
const load = Module._load;
const seen = new Set();
Module._load = function (request, ...rest) { seen.add(request); return load.call(this, request, ...rest); };
process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify([...seen]) + '\\n'));
`,
  );
  const cases: [string[], number][] = [
    [['--help'], 0],
    [['emit', '--source', 'ping', '--type', 't'], 2],
    [['emit', '--source', 'nope', '--entity', 'e', '--type', 't'], 2],
  ];
  for (const [args, exit] of cases) {
    const run = spawnSync(process.execPath, ['-r', probe, BIN, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    });
    assert.equal(run.status, exit, `${args.join(' ')}: ${run.stderr}`);
    const loaded = JSON.parse(/LOADED (.*)/.exec(run.stderr)![1]!) as string[];
    assert.ok(loaded.includes('commander'), 'the probe sees the packages the CLI loads');
    assert.ok(!loaded.includes('@temporalio/client'), `${args.join(' ')} loaded @temporalio/client`);
  }
});
