import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/*
 * Every `wakegate` CLI call loads the deployment module, which imports the public entry: the entry
 * must not load Temporal's worker (its native bridge, webpack, rxjs) or client (gRPC). Each is
 * required where it is used (createWakegate's worker(), client(), the CLI after the input is valid).
 */
const ROOT = path.resolve(__dirname, '..', '..');

test('importing the public entry loads neither @temporalio/worker nor @temporalio/client', () => {
  const script = [
    "require('./src/index.ts');",
    'const loaded = Object.keys(require.cache).filter((f) => /node_modules[\\\\/]@temporalio[\\\\/](worker|client|core-bridge)[\\\\/]/.test(f));',
    'process.stdout.write(JSON.stringify(loaded));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), []);
});
