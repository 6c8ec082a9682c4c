import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/*
 * The layout is written down in three places besides the tree: docs/ARCHITECTURE.md's folder table,
 * tsconfig.json's `include`, and eslint.config.mjs's lists (what is product, its parts under src/,
 * what is not product). A folder added to the tree and not to one of them fails here.
 */
const ROOT = path.resolve(__dirname, '..', '..');

/** Folders that hold tracked files, as `a/` or `a/b/`, from git (so build output and caches never count). */
function trackedFolders(): Set<string> {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const out = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    if (parts.length > 1 && !parts[0]!.startsWith('.')) out.add(`${parts[0]}/`);
    // One level deeper where the second level names parts or stages: src/, tools/, workflows/, activities/.
    if (parts.length > 2 && ['src', 'tools', 'workflows', 'activities'].includes(parts[0]!)) out.add(`${parts[0]}/${parts[1]}/`);
  }
  return out;
}

/** Every folder the ARCHITECTURE table names in its first column (`a/` or `a/b/` in backticks). */
function documentedFolders(): Set<string> {
  const doc = readFileSync(path.join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Folders'), doc.indexOf('\n## ', doc.indexOf('### Folders')));
  assert.ok(section.includes('| folder |'), 'ARCHITECTURE.md has no "### Folders" table');
  const out = new Set<string>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const first = line.split('|')[1]!;
    for (const m of first.matchAll(/`([a-z-]+\/(?:[a-z-]+\/)?)`/g)) out.add(m[1]!);
  }
  return out;
}

const eslintLists = async () =>
  (await import(pathToFileURL(path.join(ROOT, 'eslint.config.mjs')).href)) as { PRODUCT_ROOTS: string[]; NOT_PRODUCT: string[]; SRC_PARTS: string[] };

test('docs/ARCHITECTURE.md names every folder of the tree, and no folder the tree lacks', () => {
  const tree = trackedFolders();
  const documented = documentedFolders();
  // The top-level folders, and the parts and stages one level down; the test's own subfolders and
  // the deeper folders of a part (src/trigger/webhook/) are the part's business.
  const wanted = [...tree].filter((f) => !f.startsWith('test/') || f === 'test/');
  // A top-level folder whose parts the table lists (src/, tools/, workflows/, activities/) is named through them.
  const named = (f: string) => documented.has(f) || [...documented].some((d) => d.startsWith(f));
  assert.deepEqual(
    wanted.filter((f) => !named(f)),
    [],
    'folders missing from the table in docs/ARCHITECTURE.md',
  );
  assert.deepEqual(
    [...documented].filter((f) => !tree.has(f)),
    [],
    'the table in docs/ARCHITECTURE.md names folders the tree does not have',
  );
});

test("eslint.config.mjs counts every top-level folder as product or not, and reads src/'s parts from the tree", async () => {
  const { PRODUCT_ROOTS, NOT_PRODUCT, SRC_PARTS } = await eslintLists();
  const top = [...trackedFolders()].filter((f) => f.split('/').length === 2).map((f) => f.slice(0, -1));
  assert.deepEqual(
    [...top].sort(),
    [...PRODUCT_ROOTS, ...NOT_PRODUCT].sort(),
    'a top-level folder is in neither PRODUCT_ROOTS nor NOT_PRODUCT (eslint.config.mjs)',
  );
  const src = [...trackedFolders()].filter((f) => f.startsWith('src/') && f !== 'src/').map((f) => f.slice(4, -1));
  assert.deepEqual([...SRC_PARTS].sort(), src.sort());
});

test("tsconfig.json's include covers every TypeScript file in git", () => {
  const tsconfig = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[]; exclude: string[] };
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  const covered = (f: string) =>
    tsconfig.include.some((inc) => inc === '**/*.ts' || f === inc || f.startsWith(`${inc.replace(/\/$/, '')}/`)) &&
    !tsconfig.exclude.some((ex) => f === ex || f.startsWith(`${ex}/`));
  assert.ok(files.length > 100, `only ${files.length} TypeScript files listed`);
  assert.deepEqual(
    files.filter((f) => !covered(f)),
    [],
    'TypeScript files tsconfig.json does not include',
  );
});
