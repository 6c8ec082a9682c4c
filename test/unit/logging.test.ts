import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger as TemporalLogger, LogLevel, LogMetadata } from '@temporalio/common';
import { ConfigError, loadConfig } from '../../src/config/config';
import { bundlerLogger, prettyLogs } from '../../src/runtime/logger';

test('WAKEGATE_LOG_FORMAT: auto is pretty on a terminal only; json and pretty are chosen outright; anything else is refused by name', () => {
  assert.equal(prettyLogs('auto', true), true);
  assert.equal(prettyLogs('auto', false), false);
  assert.equal(prettyLogs('json', true), false);
  assert.equal(prettyLogs('pretty', false), true);
  assert.equal(loadConfig({}).logFormat, 'auto');
  assert.equal(loadConfig({ WAKEGATE_LOG_FORMAT: 'json' }).logFormat, 'json');
  assert.throws(
    () => loadConfig({ WAKEGATE_LOG_FORMAT: 'xml' }),
    (err: unknown) => err instanceof ConfigError && /WAKEGATE_LOG_FORMAT/.test(err.message),
  );
});

test("the bundler's report goes to debug; its warnings and errors keep their level", () => {
  const seen: [LogLevel, string, LogMetadata | undefined][] = [];
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => void seen.push([level, message, meta]);
  const base: TemporalLogger = {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
  const bundler = bundlerLogger(base);
  bundler.info('asset workflow-bundle.js 1.8 MiB [emitted]');
  bundler.info('Workflow bundle created', { size: '1.84MB' });
  bundler.warn('a disallowed module');
  bundler.error('Webpack finished with errors');
  bundler.log('TRACE', 'detail');
  assert.deepEqual(
    seen.map(([level, message]) => [level, message]),
    [
      ['DEBUG', 'asset workflow-bundle.js 1.8 MiB [emitted]'],
      ['DEBUG', 'Workflow bundle created'],
      ['WARN', 'a disallowed module'],
      ['ERROR', 'Webpack finished with errors'],
      ['DEBUG', 'detail'],
    ],
  );
  assert.deepEqual(seen[1]![2], { size: '1.84MB', sdkComponent: 'bundler' });
});
