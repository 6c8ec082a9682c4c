import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { temporalCliPath, temporalTestServerPath } from '../devserver/binaries';

/**
 * `npm test`: the whole suite on node's test runner, one file at a time (each file starts its own
 * real Temporal servers and stops them). A missing Temporal binary fails here, loudly, before any test.
 * Pass file paths or a substring to run a subset: `npm test -- gate`.
 */
const root = path.resolve(__dirname, '..', '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return name === 'helpers' || name === 'fixtures' ? [] : testFiles(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const env = { ...process.env, TEMPORAL_CLI_PATH: temporalCliPath(), TEMPORAL_TEST_SERVER_PATH: temporalTestServerPath() };
const filters = process.argv.slice(2);
const files = testFiles(path.join(root, 'test'))
  .sort()
  .filter((f) => filters.length === 0 || filters.some((flt) => path.relative(root, f).includes(flt)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
/** No test may run longer than this; the whole suite no longer than SUITE_LIMIT_MS (the suite takes about 12 min). */
const TEST_TIMEOUT_MS = 900_000;
const SUITE_LIMIT_MS = Number(process.env.WAKEGATE_TEST_SUITE_LIMIT_MS ?? 70 * 60_000);
// Its own process group, so that a hung file, its servers and its browsers can all be killed.
const runner = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=1',
    `--test-timeout=${TEST_TIMEOUT_MS}`,
    '--test-reporter=spec',
    ...files.map((f) => path.relative(root, f)),
  ],
  { cwd: root, env, stdio: 'inherit', detached: true },
);
const watchdog = setTimeout(() => {
  console.error(`npm test: the suite ran past ${SUITE_LIMIT_MS / 60_000} min; killing it and everything it started`);
  try {
    process.kill(-runner.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}, SUITE_LIMIT_MS);
const stop = (signal: NodeJS.Signals) => {
  try {
    process.kill(-runner.pid!, signal);
  } catch {
    // already gone
  }
};
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));
runner.on('exit', (code) => {
  clearTimeout(watchdog);
  process.exit(code ?? 1);
});
