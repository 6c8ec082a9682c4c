// @ts-check
/**
 * Builds the `wakegate` command: one esbuild bundle of src/cli/main.ts (and everything of this project it
 * imports) into lib/cli/main.js, so the CLI starts as plain JavaScript instead of transpiling
 * TypeScript on every call; and src/cli/resident-link.ts into lib/cli/resident-link.js, the few node
 * built-ins with which `emit` asks a resident process first (bin/wakegate.js). npm packages stay
 * external (required from node_modules at run time).
 *
 * Incremental: rebuilds only when the bundle is missing, or when any file that went into the last
 * build (listed in its metafile), tsconfig.json, package.json or this script is newer than it. A new
 * source file is always imported by an edited one, so the edited importer triggers the rebuild.
 * Called by tools/scripts/ensure-setup.sh (npm start, npm test, typecheck, lint, the benches) and by
 * `npm run build`; `--force` rebuilds unconditionally.
 */
import { build } from 'esbuild';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const OUT = path.join(ROOT, 'lib', 'cli', 'main.js');
const META = path.join(ROOT, 'lib', 'cli', 'meta.json');
const LINK = path.join(ROOT, 'lib', 'cli', 'resident-link.js');

/** @returns {string | undefined} why the bundle must be (re)built, or undefined when it is current */
function staleReason() {
  if (process.argv.includes('--force')) return '--force';
  if (!existsSync(OUT) || !existsSync(LINK) || !existsSync(META)) return 'no build yet';
  const built = Math.min(statSync(OUT).mtimeMs, statSync(LINK).mtimeMs);
  /** @type {{ inputs: Record<string, unknown> }} */
  const meta = JSON.parse(readFileSync(META, 'utf8'));
  const inputs = [...Object.keys(meta.inputs), 'tsconfig.json', 'package.json', 'tools/scripts/build-cli.mjs'];
  for (const rel of inputs) {
    const file = path.join(ROOT, rel);
    if (!existsSync(file)) return `${rel} is gone`;
    if (statSync(file).mtimeMs > built) return `${rel} changed`;
  }
  return undefined;
}

const reason = staleReason();
if (reason) {
  const t0 = performance.now();
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: 'src/cli/main.ts', 'resident-link': 'src/cli/resident-link.ts' },
    outdir: path.dirname(OUT),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    banner: { js: '// Built by tools/scripts/build-cli.mjs from src/cli/; do not edit (lib/ is not in git).' },
  });
  writeFileSync(META, JSON.stringify(result.metafile));
  process.stderr.write(`setup: built lib/cli/main.js and resident-link.js (${reason}) in ${Math.round(performance.now() - t0)} ms\n`);
}
