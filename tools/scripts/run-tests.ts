import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporalCliPath, temporalTestServerPath } from '../../src/testing/binaries';
import { byGroup, DURATIONS, groupOf, phasesOf, readDurations, testFiles, writeDurations, type FileDuration } from './test-groups';

/**
 * `npm test`: the whole suite on node's test runner, group by group: test/unit, test/time-skipping,
 * test/dev-server, test/processes (tools/scripts/test-groups.ts). Each file starts its own real
 * Temporal servers and stops them. Files run in phases of lanes side by side (`phasesOf` in
 * tools/scripts/test-groups.ts): no two processes files at once, the soak alone. A missing Temporal binary fails
 * here, loudly, before any test. Pass file paths or a substring to run a subset: `npm test -- gate`,
 * `npm test -- test/unit`.
 *
 * At the end of a run that was not cut short (by the watchdog or a signal), each file's wall time and
 * result go to test/results/durations.json: the entries of the files this run ran are replaced (a full
 * run: all of them), the others are kept; then docs/TESTS.md's durations section is made afresh
 * from it. WAKEGATE_TEST_DURATIONS=off leaves both alone.
 */
const root = path.resolve(__dirname, '..', '..');

const env = { ...process.env, TEMPORAL_CLI_PATH: temporalCliPath(), TEMPORAL_TEST_SERVER_PATH: temporalTestServerPath() };
const filters = process.argv.slice(2);
const files = testFiles(root)
  .filter((f) => filters.length === 0 || filters.some((flt) => f.includes(flt) || path.resolve(root, f) === path.resolve(flt)))
  .sort(byGroup);
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
/** No test may run longer than this; the whole suite no longer than SUITE_LIMIT_MS (the suite takes about 20 min on 2 cores). */
const TEST_TIMEOUT_MS = 900_000;
const SUITE_LIMIT_MS = Number(process.env.WAKEGATE_TEST_SUITE_LIMIT_MS ?? 70 * 60_000);
const recording = process.env.WAKEGATE_TEST_DURATIONS !== 'off';
const at = new Date().toISOString();
// Each file's end, one JSON line, from a second reporter beside the spec reporter on the terminal.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'wakegate-tests-'));
let lanesRun = 0;
const endsOf = (lane: number) => path.join(scratch, `files-${lane}.jsonl`);

/** The phases, their lanes weighted by each file's last measured wall time. */
const last = new Map((readDurations(root)?.files ?? []).map((d) => [d.file, d.ms]));
const phases = phasesOf(files, (f) => last.get(f));

/** The runners now running, each in its own process group, so that a hung file, its servers and its browsers can all be killed. */
const runners = new Set<ReturnType<typeof spawn>>();
function runLane(these: string[]): Promise<number> {
  const lane = lanesRun++;
  const runner = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=1',
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${path.join(__dirname, 'test-reporter.mjs')}`,
      `--test-reporter-destination=${endsOf(lane)}`,
      ...these,
    ],
    { cwd: root, env, stdio: 'inherit', detached: true },
  );
  runners.add(runner);
  return new Promise((resolve) =>
    runner.on('exit', (code) => {
      runners.delete(runner);
      resolve(code ?? 1);
    }),
  );
}

/** A phase's lanes side by side; the first failing exit code, or 0. */
async function runPhase(phase: number): Promise<number> {
  const codes = await Promise.all(phases[phase]!.lanes.map(runLane));
  return codes.find((c) => c !== 0) ?? 0;
}
const killRunners = (signal: NodeJS.Signals) => {
  for (const runner of runners) {
    try {
      process.kill(-runner.pid!, signal);
    } catch {
      // already gone
    }
  }
};
let cutShort = false;
const watchdog = setTimeout(() => {
  console.error(`npm test: the suite ran past ${SUITE_LIMIT_MS / 60_000} min; killing it and everything it started`);
  cutShort = true;
  killRunners('SIGKILL');
}, SUITE_LIMIT_MS);
const stop = (signal: NodeJS.Signals) => {
  cutShort = true;
  killRunners(signal);
};
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));

/** This run's measurements, one per file that ended, from the reporter's lines. */
function measured(): FileDuration[] {
  const lines = Array.from({ length: lanesRun }, (_, i) => i).flatMap((i) =>
    existsSync(endsOf(i)) ? readFileSync(endsOf(i), 'utf8').split('\n').filter(Boolean) : [],
  );
  const command = filters.length ? `npm test -- ${filters.join(' ')}` : 'npm test';
  return lines.map((line) => {
    const { file, ms, passed } = JSON.parse(line) as { file: string; ms: number; passed: boolean };
    const rel = path.relative(root, file).split(path.sep).join('/');
    return { file: rel, group: groupOf(rel) ?? 'none', ms, passed, at, cpus: os.cpus().length, node: process.version, command };
  });
}

/** Write the durations file and the docs' durations section; a failure here is said, and fails the run. */
async function record(): Promise<boolean> {
  try {
    const runs = measured();
    if (runs.length === 0) return true;
    const written = writeDurations(root, runs);
    const { refreshDurations } = await import('./docs.js');
    const docs = refreshDurations(root);
    const slow = [...runs].sort((a, b) => b.ms - a.ms).slice(0, 3);
    console.log(
      `npm test: ${runs.length} file durations in ${path.relative(root, written)}` +
        ` (slowest: ${slow.map((d) => `${d.file} ${(d.ms / 1000).toFixed(1)} s`).join(', ')}); ` +
        `durations section rewritten in ${docs.length ? docs.join(', ') : 'no doc (already current)'}`,
    );
    return true;
  } catch (err) {
    console.error(`npm test: could not write ${DURATIONS}: ${(err as Error).stack ?? String(err)}`);
    return false;
  }
}

void (async () => {
  let code = 0;
  for (let i = 0; i < phases.length && !cutShort; i++) {
    const phaseCode = await runPhase(i);
    if (phaseCode !== 0 && code === 0) code = phaseCode;
  }
  clearTimeout(watchdog);
  const ok = cutShort || !recording || (await record());
  if (cutShort && recording) console.error(`npm test: the run was cut short; ${DURATIONS} left as it was`);
  rmSync(scratch, { recursive: true, force: true });
  process.exit(ok ? (cutShort && code === 0 ? 1 : code) : code || 1);
})();
