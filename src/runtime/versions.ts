import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The Temporal packages wakegate loads, whose versions must be one: two copies of the worker's native bridge crash a process. */
const TEMPORAL_PACKAGES = ['@temporalio/client', '@temporalio/worker', '@temporalio/workflow', '@temporalio/activity', '@temporalio/common'];

/** The version of each Temporal package as this process resolves it (undefined: not installed). */
export function installedTemporalVersions(from: string = __dirname): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of TEMPORAL_PACKAGES) {
    try {
      // A package's main file, then up to its package.json: the exports maps do not all expose ./package.json.
      let dir = path.dirname(require.resolve(name, { paths: [from] }));
      while (!dir.endsWith(path.join('node_modules', ...name.split('/'))) && path.dirname(dir) !== dir) dir = path.dirname(dir);
      out[name] = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      out[name] = undefined;
    }
  }
  return out;
}

/** What is wrong with a set of Temporal package versions (a missing one, or more than one version), or undefined. */
export function temporalVersionProblem(versions: Record<string, string | undefined>): string | undefined {
  const missing = Object.entries(versions).filter(([, v]) => v === undefined);
  if (missing.length) {
    return `wakegate needs ${missing.map(([n]) => n).join(', ')} (a peer dependency): npm install ${missing.map(([n]) => n).join(' ')}`;
  }
  const distinct = [...new Set(Object.values(versions))];
  if (distinct.length <= 1) return undefined;
  const newest = distinct.sort((a, b) => a!.localeCompare(b!, undefined, { numeric: true })).at(-1)!;
  return (
    `wakegate: the @temporalio packages resolve to more than one version (${Object.entries(versions)
      .map(([n, v]) => `${n}@${v}`)
      .join(', ')}); ` +
    `one process needs one version of each (npm ls @temporalio/worker shows the copies): npm install ${Object.keys(versions)
      .map((n) => `${n}@${newest}`)
      .join(' ')}`
  );
}

/** Throws when this process would load more than one version of Temporal's packages. */
export function assertOneTemporalVersion(): void {
  const problem = temporalVersionProblem(installedTemporalVersions());
  if (problem) throw new Error(problem);
}
