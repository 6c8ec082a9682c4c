import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

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

/*
 * Nothing imports upward: outside the entry points that compose a deployment, nothing under src/
 * imports workflows/, activities/ or schedules/ (workflow code imports src/, activities import src/:
 * downward). An `import type` of a workflow function, for a typed start, is allowed. And the webhook
 * trigger imports no console module: the console builds its own listener, the deployment
 * (src/processes/) puts the two side by side.
 */
const ENTRY_POINTS = ['src/index.ts', 'src/runtime/', 'src/cli/', 'src/testing/'];
const ABOVE_SRC = ['workflows/', 'activities/', 'schedules/'];

/** Every module a file names (imports, re-exports, `import x = require()`, `require()` and `import()` calls), whether only for types, and the names it takes. */
function importsOf(file: string, text: string): { spec: string; typeOnly: boolean; names: string[] }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: { spec: string; typeOnly: boolean; names: string[] }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : [];
      const everyNameTypeOnly = !!clause && !clause.name && named.length > 0 && named.every((e) => e.isTypeOnly);
      const names = [...(clause?.name ? [clause.name.text] : []), ...named.map((e) => (e.propertyName ?? e.name).text)];
      out.push({ spec: node.moduleSpecifier.text, typeOnly: !!clause?.isTypeOnly || everyNameTypeOnly, names });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : [];
      const typeOnly = node.isTypeOnly || (named.length > 0 && named.every((e) => e.isTypeOnly));
      out.push({ spec: node.moduleSpecifier.text, typeOnly, names: named.map((e) => (e.propertyName ?? e.name).text) });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      out.push({ spec: node.moduleReference.expression.text, typeOnly: node.isTypeOnly, names: [] });
    } else if (ts.isCallExpression(node)) {
      const [first] = node.arguments;
      const callee = node.expression;
      const loads = callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');
      const resolves = ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'require';
      if ((loads || resolves) && first && ts.isStringLiteral(first)) out.push({ spec: first.text, typeOnly: false, names: [] });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push({ spec: node.argument.literal.text, typeOnly: true, names: [] });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The imports of one file (a path from the root) that break the rules above, as `file → module`. */
function upwardImports(file: string, text: string): string[] {
  const broken: string[] = [];
  for (const i of importsOf(file, text)) {
    if (!i.spec.startsWith('.')) continue;
    const target = path.posix.join(path.posix.dirname(file), i.spec);
    const above = ABOVE_SRC.find((top) => `${target}/`.startsWith(top));
    // A typed start names the workflow function's type: `import type { runWorkflow } from '.../workflows/run/workflow'`.
    const typedStart = above === 'workflows/' && i.typeOnly && i.names.length > 0 && i.names.every((n) => /Workflow$/.test(n));
    if (above && !typedStart) broken.push(`${file} → ${i.spec}`);
    if (file.startsWith('src/trigger/') && `${target}/`.startsWith('src/console/')) broken.push(`${file} → ${i.spec}`);
  }
  return broken;
}

test('nothing under src/ but its entry points imports workflows/, activities/ or schedules/, and src/trigger/ imports no console module', () => {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src/*.ts'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  const inner = files.filter((f) => !ENTRY_POINTS.some((e) => f === e || (e.endsWith('/') && f.startsWith(e))));
  assert.ok(inner.length > 100 && inner.length < files.length, `${inner.length} of ${files.length} files under src/ checked`);
  assert.deepEqual(
    inner.flatMap((f) => upwardImports(f, readFileSync(path.join(ROOT, f), 'utf8'))),
    [],
    'imports that run upward (move the imported code into src/, or invert the call), or from the webhook trigger into the console',
  );
  // The check sees what it should: the entry points do import upward, and it finds them.
  const entries = files.filter((f) => !inner.includes(f));
  assert.ok(
    entries.flatMap((f) => upwardImports(f, readFileSync(path.join(ROOT, f), 'utf8'))).length > 0,
    'the check found no upward import even in the entry points',
  );
});

test('the upward-import check: what it refuses and what it lets through', () => {
  const at = (file: string, text: string) => upwardImports(file, text).length;
  assert.equal(at('src/coalescer/a.ts', "import { decideFirst } from '../../workflows/coalescer/machine';"), 1);
  assert.equal(at('src/coalescer/a.ts', "import type { CoalescerMachine } from '../../workflows/coalescer/machine';"), 1);
  assert.equal(at('src/gate/a.ts', "import type { runWorkflow } from '../../workflows/run/workflow';"), 0);
  assert.equal(at('src/gate/a.ts', "import { type runWorkflow } from '../../workflows/run/workflow';"), 0);
  assert.equal(at('src/gate/a.ts', "import { runWorkflow } from '../../workflows/run/workflow';"), 1);
  assert.equal(at('src/gate/a.ts', "import type { Activities } from '../../activities';"), 1);
  assert.equal(at('src/gate/a.ts', "export { builtinSchedules } from '../../schedules/definitions';"), 1);
  assert.equal(at('src/gate/a.ts', "const a = require('../../activities');"), 1);
  assert.equal(at('src/gate/a.ts', "const p = require.resolve('../../workflows');"), 1);
  assert.equal(at('src/gate/a.ts', "type A = import('../../activities').Activities;"), 1);
  assert.equal(at('src/gate/a.ts', "import { eventKey } from '../core/ids';"), 0);
  assert.equal(at('src/trigger/webhook/a.ts', "import { registerWakePage } from '../../console/wake-page';"), 1);
  assert.equal(at('src/trigger/webhook/a.ts', "import type { OperatorAuthSettings } from '../../console/operator-auth';"), 1);
  assert.equal(at('src/processes/a.ts', "import { buildOperatorListener } from '../console/listener';"), 0);
});

/** A step's folder, as the walk counts folders: two segments under src/, workflows/ and activities/ (their parts), one elsewhere. */
function walkFolder(file: string): string {
  const parts = file.split('/');
  return ['src', 'workflows', 'activities'].includes(parts[0]!) && parts.length > 1 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** The walk's steps in order ("N. `path`…" and "→ N. `path`…"), each as the folder of its first path. */
export function walkSteps(markdown: string): { n: number; folder: string }[] {
  const section = markdown.slice(markdown.indexOf('### One event, from a webhook'), markdown.indexOf('### Folders'));
  return [...section.matchAll(/(?:^|→ )(\d+)\. `([^`]+)`/gm)].map((m) => ({ n: Number(m[1]), folder: walkFolder(m[2]!) }));
}

test("ARCHITECTURE's walk of one webhook event: its steps in order, each a change of folder, as many as it says and fewer than 19", () => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
  const steps = walkSteps(doc);
  assert.deepEqual(
    steps.map((s) => s.n),
    steps.map((_, i) => i + 1),
    'numbered 1, 2, 3, … in order',
  );
  steps.slice(1).forEach((s, i) => assert.notEqual(s.folder, steps[i]!.folder, `step ${s.n} names a folder only when it changes`));
  const said = Number(/(\d+) changes of folder/.exec(doc)?.[1]);
  assert.equal(steps.length - 1, said, 'the count it states');
  assert.ok(said < 19, `${said} changes: the second floor's walk had 19`);
});
