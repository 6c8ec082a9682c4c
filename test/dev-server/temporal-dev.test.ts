import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TypedSearchAttributes } from '@temporalio/common';
import { freePort } from '../../src/testing/dev-server';
import { temporalCliPath } from '../../src/testing/binaries';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/core/search-attributes';

const exec = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'temporal-dev.sh');

describe('temporal-dev.sh', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'wakegate-tds-'));
  let env: NodeJS.ProcessEnv = {};
  const run = (...args: string[]) => exec('bash', [SCRIPT, ...args], { env, timeout: 120_000 }).then((r) => r.stdout + r.stderr);
  after(async () => {
    await run('down').catch(() => undefined);
  });

  test('lists the same search attributes as the workflow code', () => {
    const script = readFileSync(SCRIPT, 'utf8');
    const block = /SEARCH_ATTRIBUTES=\(([\s\S]*?)\)/.exec(script)?.[1] ?? '';
    const inScript = block.split(/\s+/).filter(Boolean).sort();
    const inCode = ALL_SEARCH_ATTRIBUTES.map((k) => `${k.name}=${TypedSearchAttributes.toMetadataType(k.type)}`).sort();
    assert.deepEqual(inScript, inCode);
  });

  test('up registers search attributes on an existing database, raises retention, is idempotent; down stops only its own', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    env = {
      ...process.env,
      WAKEGATE_DEV_PORT: String(port),
      WAKEGATE_DEV_UI_PORT: String(uiPort),
      WAKEGATE_DEV_DIR: dir,
      WAKEGATE_RETENTION: '168h',
    };
    const address = `127.0.0.1:${port}`;
    const cli = (...args: string[]) => exec(temporalCliPath(), [...args, '--address', address], { timeout: 30_000 }).then((r) => r.stdout);

    // An existing database made by a plain start-dev without wakegate's attributes.
    const plain = spawn(
      temporalCliPath(),
      ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', path.join(dir, 'dev.db'), '--log-level', 'error'],
      { stdio: 'ignore' },
    );
    for (let i = 0; ; i++) {
      try {
        await cli('operator', 'cluster', 'health');
        break;
      } catch {
        if (i > 100) throw new Error('plain dev server did not start');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    assert.doesNotMatch(await cli('operator', 'search-attribute', 'list'), /WakeEventKey/);
    // While someone else's server answers, `up` reuses it and `down` leaves it alone.
    assert.match(await run('up'), /reusing/);
    assert.match(await run('down'), /no dev server started by this script/);
    await cli('operator', 'cluster', 'health');
    plain.kill('SIGTERM');
    await new Promise((r) => plain.once('exit', r));

    assert.match(await run('up'), /up \(pid \d+\)/);
    const attrs = await cli('operator', 'search-attribute', 'list');
    for (const k of ALL_SEARCH_ATTRIBUTES) assert.match(attrs, new RegExp(`\\b${k.name}\\b`));
    const ns = JSON.parse(await cli('operator', 'namespace', 'describe', '--namespace', 'default', '-o', 'json')) as {
      config: { workflowExecutionRetentionTtl: string };
    };
    assert.equal(ns.config.workflowExecutionRetentionTtl, `${168 * 3600}s`);
    assert.match(await run('up'), /already up/);
    assert.match(await run('status'), /started by this script/);
    assert.match(await run('cli', 'operator', 'cluster', 'health'), /SERVING/);
    assert.match(await run('down'), /stopped/);
    await assert.rejects(run('status'), (e: { code?: number; stdout?: string }) => e.code === 3 && /down/.test(e.stdout ?? ''));
  });
});
