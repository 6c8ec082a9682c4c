// @ts-check
/**
 * The package's README while it is packed. The repository's README.md is for contributors; npm
 * always ships the root README.md, so `prepack` puts PACKAGE-README.md (for users: install, init,
 * an agent, the processes, where to read on) in its place and `postpack` puts the contributors'
 * back. Both are renames (README.md is never missing), and `swap` first restores what a pack that
 * died between the two left behind, so a failed pack heals on the next one.
 *
 *   node tools/scripts/pack-readme.mjs swap|restore [root]
 */
import { copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const [command, rootArg] = process.argv.slice(2);
const ROOT = rootArg ? path.resolve(rootArg) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = path.join(ROOT, 'README.md');
const PACKAGE_README = path.join(ROOT, 'PACKAGE-README.md');
/** Where the contributors' README waits during a pack: under .wakegate/, ignored by git and not in `files`. */
const SAVED = path.join(ROOT, '.wakegate', 'pack', 'README.md');

function restore() {
  if (existsSync(SAVED)) renameSync(SAVED, README);
}

if (command === 'swap') {
  restore();
  if (!existsSync(PACKAGE_README)) throw new Error(`pack-readme: ${PACKAGE_README} is missing`);
  mkdirSync(path.dirname(SAVED), { recursive: true });
  copyFileSync(README, SAVED);
  const next = `${README}.packing`;
  copyFileSync(PACKAGE_README, next);
  renameSync(next, README);
} else if (command === 'restore') {
  restore();
} else {
  process.stderr.write('usage: node tools/scripts/pack-readme.mjs swap|restore [root]\n');
  process.exit(2);
}
