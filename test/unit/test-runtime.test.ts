import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '..', '..');

test("installTestRuntime prints the SDK's warnings, less the time-skipping server's capability notice, and nothing below WARN", async () => {
  const script = `
    const { Runtime } = require('@temporalio/worker');
    const { installTestRuntime } = require('./src/testing');
    installTestRuntime();
    const log = Runtime.instance().logger;
    log.info('an info line');
    log.warn('the server did not advertise the activity_failure_include_heartbeat capability', { sdkComponent: 'core' });
    log.warn('a real warning');
    log.error('a real error');
    setTimeout(() => process.exit(0), 300); // stderr drains first; the installed runtime would keep the process alive
  `;
  const { stderr, stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, timeout: 60_000 });
  const printed = `${stdout}${stderr}`;
  assert.match(printed, /a real warning/);
  assert.match(printed, /a real error/);
  assert.doesNotMatch(printed, /activity_failure_include_heartbeat/);
  assert.doesNotMatch(printed, /an info line/);
});
