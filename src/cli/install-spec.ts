import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** How a new project depends on wakegate, and why that spec. */
export interface InstallSpec {
  /** What goes into the project's `dependencies.wakegate`. */
  spec: string;
  /**
   * Where this wakegate came from: `registry` (a published version), `tarball` (a packed
   * `wakegate-<version>.tgz`), `folder` (a `file:` folder), `checkout` (a clone, run in place),
   * `unknown` (installed, but no lockfile says from where).
   */
  from: 'registry' | 'tarball' | 'folder' | 'checkout' | 'unknown';
  /** Said on stderr when the spec may not install as it is: what to run instead. */
  warning?: string;
}

/** A `file:` spec for `target` (the new project's folder), relative when both sit under one folder tree. */
function fileSpec(target: string, file: string): string {
  const relative = path.relative(target, file).split(path.sep).join('/');
  return `file:${relative.startsWith('../') || relative.startsWith('./') ? relative : `./${relative}`}`;
}

const isTarball = (file: string) => /\.(tgz|tar\.gz)$/.test(file);

/**
 * Where npm says the package at `<prefix>/node_modules/wakegate` was resolved from: the hidden
 * lockfile npm keeps in `node_modules` (npm 7+; `npx` installs keep one too), else the project's
 * `package-lock.json`. A `file:` path there is relative to the prefix; made absolute here.
 */
function lockedResolution(prefix: string): string | undefined {
  for (const lock of [path.join(prefix, 'node_modules', '.package-lock.json'), path.join(prefix, 'package-lock.json')]) {
    if (!existsSync(lock)) continue;
    try {
      const packages = (JSON.parse(readFileSync(lock, 'utf8')) as { packages?: Record<string, { resolved?: string }> }).packages;
      const resolved = packages?.['node_modules/wakegate']?.resolved;
      if (resolved === undefined) continue;
      return resolved.startsWith('file:') ? `file:${path.resolve(prefix, resolved.slice('file:'.length))}` : resolved;
    } catch {
      continue; // an unreadable lockfile says nothing; the next one may
    }
  }
  return undefined;
}

/**
 * The dependency a project made by `wakegate init` in `target` should declare on the wakegate that
 * runs it (whose package root is `root`, at `version`): the same tarball or folder it was installed
 * from (`npx ./wakegate-0.1.0.tgz init`, `npm install ../wakegate-0.1.0.tgz`), a packed tarball
 * beside a checkout run in place, else `^version` from the registry. A spec that may not install
 * comes with a warning that says what to run.
 */
export function installSpec(root: string, version: string, target: string): InstallSpec {
  const registry = `^${version}`;
  const parts = root.split(path.sep);
  const nm = parts.lastIndexOf('node_modules');
  if (nm === -1) {
    // Run in place from a folder (a clone): a `file:` folder would link it with its own
    // node_modules, a second copy of every @temporalio/* package. Its packed tarball installs.
    const packed = path.join(root, `wakegate-${version}.tgz`);
    if (existsSync(packed)) return { spec: fileSpec(target, packed), from: 'checkout' };
    return {
      spec: registry,
      from: 'checkout',
      warning:
        `this wakegate runs from ${root}, not from an installed package, and ${registry} installs only once that version is published. ` +
        `To use this one: run npm pack in ${root}, then init again (it finds the tarball), or pass --wakegate file:<path to the .tgz>`,
    };
  }
  const prefix = parts.slice(0, nm).join(path.sep) || path.sep;
  const resolved = lockedResolution(prefix);
  if (resolved === undefined) {
    return {
      spec: registry,
      from: 'unknown',
      warning: `no lockfile under ${prefix} says where this wakegate came from; if npm install cannot find wakegate@${registry}, pass --wakegate file:<path to wakegate-${version}.tgz>`,
    };
  }
  if (!resolved.startsWith('file:')) return { spec: registry, from: 'registry' };
  const file = resolved.slice('file:'.length);
  const from = isTarball(file) ? 'tarball' : 'folder';
  if (!existsSync(file)) {
    return {
      spec: fileSpec(target, file),
      from,
      warning: `this wakegate was installed from ${file}, which is gone: put it back, or pass --wakegate with where it is now`,
    };
  }
  return { spec: fileSpec(target, file), from };
}
