import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  dev?: boolean;
  peer?: boolean;
  devOptional?: boolean;
  [k: string]: unknown;
}

/**
 * The package-lock.json of a user's package that depends on wakegate's tarball alone: every package
 * the tarball needs (its dependencies and its peers, and theirs), at the versions and integrities
 * this checkout's lock pins, so `npm ci --offline` installs it from the local cache with no network
 * (npm resolves a bare `npm install` through registry metadata it does not keep offline).
 */
export function userPackageLock(
  root: string,
  tarball: string,
  user: { name: string; version: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string> },
): string {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const wakegate = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as LockEntry & {
    name: string;
    version: string;
    bin?: unknown;
    engines?: unknown;
    license?: string;
  };
  const packages: Record<string, LockEntry> = {
    '': {
      name: user.name,
      version: user.version,
      dependencies: { ...user.dependencies, wakegate: `file:${tarball}` },
      ...(user.devDependencies ? { devDependencies: user.devDependencies } : {}),
    },
    'node_modules/wakegate': {
      version: wakegate.version,
      resolved: `file:${tarball}`,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      license: wakegate.license,
      dependencies: wakegate.dependencies,
      peerDependencies: wakegate.peerDependencies,
      bin: wakegate.bin,
      engines: wakegate.engines,
    },
  };
  /** Where node finds `dep` from the package at `at`: its own node_modules, then each parent's, then the top. */
  const resolve = (at: string, dep: string): string | undefined => {
    for (let dir = at; ;) {
      const candidate = `${dir ? `${dir}/` : ''}node_modules/${dep}`;
      if (lock.packages[candidate]) return candidate;
      if (!dir) return undefined;
      const i = dir.lastIndexOf('/node_modules/');
      dir = i < 0 ? '' : dir.slice(0, i);
    }
  };
  const todo: [string, LockEntry][] = [['node_modules/wakegate', packages['node_modules/wakegate']!]];
  // The user's own dependencies beside wakegate (Temporal's packages, tsx, TypeScript): at this checkout's versions.
  for (const dep of Object.keys({ ...user.dependencies, ...user.devDependencies })) {
    const at = `node_modules/${dep}`;
    if (dep === 'wakegate' || packages[at]) continue;
    if (!lock.packages[at]) throw new Error(`${dep}, a dependency of ${user.name}, is not in this checkout's lock: it cannot be installed offline`);
    const { dev: _dev, peer: _peer, devOptional: _devOptional, ...kept } = lock.packages[at];
    packages[at] = kept;
    todo.push([at, kept]);
  }
  while (todo.length) {
    const [at, entry] = todo.pop()!;
    const optionalPeers = new Set(Object.entries(entry.peerDependenciesMeta ?? {}).flatMap(([n, m]) => (m.optional ? [n] : [])));
    const wanted = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
      ...Object.keys(entry.peerDependencies ?? {}).filter((n) => !optionalPeers.has(n)),
    ];
    for (const dep of wanted) {
      // wakegate's own entry is not in this checkout's lock: its dependencies resolve from the top.
      const found = resolve(at === 'node_modules/wakegate' ? '' : at, dep);
      if (!found || packages[found]) continue;
      const { dev: _dev, peer: _peer, devOptional: _devOptional, ...kept } = lock.packages[found]!;
      packages[found] = kept;
      todo.push([found, kept]);
    }
  }
  return JSON.stringify({ name: user.name, version: user.version, lockfileVersion: 3, requires: true, packages }, null, 2) + '\n';
}
