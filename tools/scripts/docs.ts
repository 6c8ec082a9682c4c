import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { benchSection } from './docs-bench';
import { readTests, testDurations, testInventory, testSummary, type TestFile } from './docs-tests';

/**
 * `npm run docs`: regenerate the generated sections of the docs. A section sits between
 * `<!-- generated:NAME -->` and `<!-- /generated -->` in README.md or any Markdown file under docs/;
 * everything outside the markers is written by people and left alone. Names:
 * - `bench:<name>`: the figures of `tools/bench/results/<name>.json` (see tools/scripts/docs-bench.ts);
 * - `tests`: the test inventory, every test file with its describe and test names;
 * - `tests:summary`: one line, how many tests in how many files;
 * - `tests:durations`: each test file's wall time from `test/results/durations.json`, slowest first
 *   (`npm test` writes that file and remakes this section itself at the end of a run).
 * `npm run docs -- --check` writes nothing and exits 1 naming the files whose sections are stale
 * (test/unit/docs.test.ts makes the same check).
 */

export const ROOT = path.resolve(__dirname, '..', '..');
const SECTION = /(<!-- generated:([\w:-]+) -->\n)[\s\S]*?(<!-- \/generated -->)/g;

/** README.md and every Markdown file under docs/, from the project root. */
export function docFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const p = path.join(dir, name);
        return statSync(p).isDirectory() ? walk(p) : name.endsWith('.md') ? [p] : [];
      });
  return ['README.md', ...walk(path.join(root, 'docs')).map((p) => path.relative(root, p).split(path.sep).join('/'))];
}

/** The body of one generated section. */
function sectionBody(root: string, name: string, tests: () => TestFile[]): string {
  if (name.startsWith('bench:')) return benchSection(root, name.slice('bench:'.length));
  if (name === 'tests') return testInventory(tests());
  if (name === 'tests:summary') return testSummary(tests());
  if (name === 'tests:durations') return testDurations(root);
  throw new Error(`unknown generated section "${name}" (known: bench:<name>, tests, tests:summary, tests:durations)`);
}

/**
 * Every doc's text with its generated sections made afresh (those `only` accepts, when given), keyed by
 * path from the root; only files that have sections.
 */
export function regenerate(root: string, only?: (name: string) => boolean): Map<string, { current: string; fresh: string }> {
  let parsed: TestFile[] | undefined;
  const tests = () => (parsed ??= readTests(root));
  const out = new Map<string, { current: string; fresh: string }>();
  for (const file of docFiles(root)) {
    const current = readFileSync(path.join(root, file), 'utf8');
    if (!current.includes('<!-- generated:')) continue;
    const fresh = current.replace(SECTION, (all: string, open: string, name: string, close: string) =>
      only && !only(name) ? all : `${open}${sectionBody(root, name, tests)}\n${close}`,
    );
    out.set(file, { current, fresh });
  }
  return out;
}

/** The docs whose generated sections differ from what the results files and test files say now. */
export function staleDocs(root: string): string[] {
  return [...regenerate(root)].filter(([, v]) => v.current !== v.fresh).map(([file]) => file);
}

/** Remake the `tests:durations` sections alone (npm test, after writing the durations file); returns the docs rewritten. */
export function refreshDurations(root: string): string[] {
  const stale = [...regenerate(root, (name) => name === 'tests:durations')].filter(([, v]) => v.current !== v.fresh);
  for (const [file, { fresh }] of stale) writeFileSync(path.join(root, file), fresh);
  return stale.map(([file]) => file);
}

/** Every generated section's name in the docs, by file. */
export function sectionsOf(root: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of docFiles(root)) {
    const names = [...readFileSync(path.join(root, file), 'utf8').matchAll(SECTION)].map((m) => m[2]!);
    if (names.length) out.set(file, names);
  }
  return out;
}

function main(): void {
  const check = process.argv.includes('--check');
  const docs = regenerate(ROOT);
  const stale = [...docs].filter(([, v]) => v.current !== v.fresh);
  if (check) {
    if (stale.length) {
      console.error(`stale generated sections in ${stale.map(([f]) => f).join(', ')}: run npm run docs`);
      process.exit(1);
    }
    console.log(`docs: ${docs.size} files with generated sections, all current`);
    return;
  }
  for (const [file, { fresh }] of stale) writeFileSync(path.join(ROOT, file), fresh);
  console.log(`docs: ${docs.size} files with generated sections; rewrote ${stale.length ? stale.map(([f]) => f).join(', ') : 'none'}`);
}

if (require.main === module) main();
