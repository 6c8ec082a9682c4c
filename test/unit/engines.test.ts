import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const json = <T>(file: string): T => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as T;
/** npm's own range logic (semver, installed with the toolchain; no types of its own here). */
const semver = createRequire(__filename)('semver') as { subset(sub: string, dom: string): boolean };

interface Manifest {
  engines: { node: string };
}
interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

test('the generated project asks for the Node this package asks for', () => {
  const own = json<Manifest>('package.json');
  const project = json<Manifest>('templates/project/_package.json');
  assert.equal(project.engines.node, own.engines.node);
});

test('every package a user installs with wakegate runs on every Node its engines field admits: npm install warns no EBADENGINE', () => {
  const range = json<Manifest>('package.json').engines.node;
  const lock = json<{ packages: Record<string, LockEntry> }>('package-lock.json');
  const narrower = Object.entries(lock.packages)
    .filter(([where, p]) => where !== '' && !p.dev && !Array.isArray(p.engines) && p.engines?.node)
    .filter(([, p]) => !semver.subset(range, (p.engines as { node: string }).node))
    .map(([where, p]) => `${where}@${p.version} wants node ${(p.engines as { node: string }).node}`);
  assert.deepEqual(narrower, [], `wakegate says node ${range}; pin these to a version that agrees (package.json dependencies), or raise engines`);
});
