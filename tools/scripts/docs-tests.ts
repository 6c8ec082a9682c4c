import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The test inventory, read from the test files themselves with the TypeScript compiler: every call
 * of node:test's `describe`/`suite`/`test`/`it` (and their `.skip`/`.only`/`.todo` forms) whose first
 * argument is a string or a template, nested as the calls are. A name built from a loop variable is
 * shown as written (`${what}`); `/x/.test(s)` and other `.test` methods are not test calls and are
 * never counted.
 */

export interface TestNode {
  kind: 'describe' | 'test';
  name: string;
  children: TestNode[];
}

export interface TestFile {
  /** Path from the project root, with forward slashes. */
  file: string;
  /** Which Temporal server the file starts, from what it imports from the test helpers. */
  server: 'no server' | 'dev server' | 'time-skipping server' | 'dev server and time-skipping server';
  tests: TestNode[];
}

const SUITE = new Set(['describe', 'suite']);
const CASE = new Set(['test', 'it']);
const MODIFIERS = new Set(['skip', 'only', 'todo']);

/** Every `*.test.ts` under test/, helpers and fixtures excepted: the files `npm test` runs. */
export function testFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const p = path.join(dir, name);
        if (statSync(p).isDirectory()) return name === 'helpers' || name === 'fixtures' ? [] : walk(p);
        return name.endsWith('.test.ts') ? [p] : [];
      });
  return walk(path.join(root, 'test'))
    .map((p) => path.relative(root, p).split(path.sep).join('/'))
    .sort();
}

/** `describe` or `test` when `call` is one of node:test's, else undefined. */
function kindOf(call: ts.CallExpression, imported: Set<string>): TestNode['kind'] | undefined {
  let callee = call.expression;
  if (ts.isPropertyAccessExpression(callee) && MODIFIERS.has(callee.name.text)) callee = callee.expression;
  if (!ts.isIdentifier(callee) || !imported.has(callee.text)) return undefined;
  if (SUITE.has(callee.text)) return 'describe';
  if (CASE.has(callee.text)) return 'test';
  return undefined;
}

/** A test's name as written: a string's text, or a template with its `${…}` parts kept as source. */
function nameOf(arg: ts.Expression | undefined, source: ts.SourceFile): string | undefined {
  if (!arg) return undefined;
  if (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) return arg.text;
  if (ts.isTemplateExpression(arg)) {
    return arg.head.text + arg.templateSpans.map((s) => `\${${s.expression.getText(source)}}${s.literal.text}`).join('');
  }
  return undefined;
}

/** The names a file imports from 'node:test' (so a local `test` of another kind is never mistaken for one). */
function nodeTestImports(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const st of source.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier) || st.moduleSpecifier.text !== 'node:test') continue;
    const bindings = st.importClause?.namedBindings;
    if (bindings && ts.isNamedImports(bindings)) {
      for (const el of bindings.elements) if ((el.propertyName ?? el.name).text === el.name.text) names.add(el.name.text);
    }
  }
  return names;
}

/** Which servers a test file starts, by the helpers it imports. */
function serverOf(source: ts.SourceFile): TestFile['server'] {
  const imported = new Set<string>();
  for (const st of source.statements) {
    const bindings = ts.isImportDeclaration(st) ? st.importClause?.namedBindings : undefined;
    if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) imported.add(el.name.text);
  }
  const dev = ['startDevEnv', 'DevServer', 'temporalCliPath'].some((n) => imported.has(n));
  const skipping = ['startTimeSkippingEnv', 'TestWorkflowEnvironment'].some((n) => imported.has(n));
  if (dev && skipping) return 'dev server and time-skipping server';
  if (dev) return 'dev server';
  if (skipping) return 'time-skipping server';
  return 'no server';
}

/** Parse one test file's text into its tree of describe and test names. */
export function parseTestFile(file: string, text: string): TestFile {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const imported = nodeTestImports(source);
  const visit = (node: ts.Node, into: TestNode[]): void => {
    if (ts.isCallExpression(node)) {
      const kind = kindOf(node, imported);
      const name = kind && nameOf(node.arguments[0], source);
      if (kind && name !== undefined) {
        const entry: TestNode = { kind, name, children: [] };
        into.push(entry);
        for (const arg of node.arguments.slice(1)) visit(arg, entry.children);
        return;
      }
    }
    ts.forEachChild(node, (child) => visit(child, into));
  };
  const tests: TestNode[] = [];
  visit(source, tests);
  return { file, server: serverOf(source), tests };
}

/** Every test file of the project, parsed. */
export function readTests(root: string): TestFile[] {
  return testFiles(root).map((file) => parseTestFile(file, readFileSync(path.join(root, file), 'utf8')));
}

const countTests = (nodes: TestNode[]): number => nodes.reduce((n, t) => n + (t.kind === 'test' ? 1 : 0) + countTests(t.children), 0);

/** A name on one Markdown line, safe inside a table cell too. */
const md = (s: string) => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

/** One line: how many tests in how many files, and how many of them need no server. */
export function testSummary(files: TestFile[]): string {
  const unit = files.filter((f) => f.file.startsWith('test/unit/'));
  return (
    `${countTests(files.flatMap((f) => f.tests))} tests in ${files.length} files, as written (a test declared in a loop counts once); ` +
    `${countTests(unit.flatMap((f) => f.tests))} of them in the ${unit.length} files of \`test/unit/\`, which start no server.`
  );
}

/** The inventory in Markdown: a section per file, its describe blocks and tests as a nested list. */
export function testInventory(files: TestFile[]): string {
  const list = (nodes: TestNode[], depth: number): string[] =>
    nodes.flatMap((n) => [`${'  '.repeat(depth)}- ${n.kind === 'describe' ? `**${md(n.name)}**` : md(n.name)}`, ...list(n.children, depth + 1)]);
  const out = [testSummary(files), ''];
  for (const f of files) {
    const n = countTests(f.tests);
    out.push(`### \`${f.file}\``, '', `${n} ${n === 1 ? 'test' : 'tests'}; ${f.server}.`, '', ...list(f.tests, 0), '');
  }
  return out.join('\n').trimEnd();
}
