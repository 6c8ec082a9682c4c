import os from 'node:os';
import path from 'node:path';

/**
 * The settings `wakegate emit` reads before anything else is loaded (src/cli/resident-link.ts), without
 * zod on purpose: they decide whether a resident process answers, which costs less than parsing the
 * full configuration (src/config/config.ts) would.
 * - `WAKEGATE_RESIDENT`: `off` never asks nor starts a resident process; anything else (default) does.
 * - The identity of the resident process: every variable but the shell's own changing ones, since any
 *   of them can change what the deployment module builds. A resident process serves only callers
 *   with the same environment.
 */
export interface ResidentSettings {
  enabled: boolean;
  /** The environment as the resident process's identity, sorted by name. */
  identity: [string, string | undefined][];
}

/** Variables that change between calls of one script without changing the deployment (the shell's own). */
const VOLATILE_ENV = new Set(['_', 'OLDPWD', 'PWD', 'SHLVL', 'COLUMNS', 'LINES']);

export function residentSettings(env: NodeJS.ProcessEnv = process.env): ResidentSettings {
  const identity = Object.entries(env)
    .filter(([k]) => !VOLATILE_ENV.has(k))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { enabled: env.WAKEGATE_RESIDENT !== 'off', identity };
}

/**
 * The Temporal profile files the configuration may read (src/config/config.ts, through
 * @temporalio/envconfig): TEMPORAL_CONFIG_FILE when set, and the default `temporal.toml` under
 * XDG_CONFIG_HOME or ~/.config. A resident process retires when one of them appears or changes.
 */
export function temporalProfileFiles(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string[] {
  const configHome = env.XDG_CONFIG_HOME || path.join(home, '.config');
  return [env.TEMPORAL_CONFIG_FILE, path.join(configHome, 'temporalio', 'temporal.toml')].filter((f): f is string => Boolean(f));
}
