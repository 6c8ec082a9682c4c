import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { DURATIONS, GROUPS, groupOf, readDurations, STARTS, testFiles, type FileDuration, type Group } from './test-groups';

/**
 * The test inventory, read from the test files themselves with the TypeScript compiler: every call
 * of node:test's `describe`/`suite`/`test`/`it` (and their `.skip`/`.only`/`.todo` forms) whose first
 * argument is a string or a template, nested as the calls are. A name built from a loop variable is
 * shown as written (`${what}`); `/x/.test(s)` and other `.test` methods are not test calls and are
 * never counted. And the durations `npm test` measured (test/results/durations.json), slowest first.
 */

export interface TestNode {
  kind: 'describe' | 'test';
  name: string;
  children: TestNode[];
}

export interface TestFile {
  /** Path from the project root, with forward slashes. */
  file: string;
  /** Its group: the folder under test/ it sits in (tools/scripts/test-groups.ts); undefined outside the group folders. */
  group: Group | undefined;
  /**
   * The least its imports show it starts: `processes` for a spawned worker or a browser, `dev-server`
   * for the dev server or the Temporal CLI, `time-skipping` for the time-skipping server, else `unit`.
   * A file may start more than its imports show (a process spawned by hand), never less.
   */
  starts: Group;
  tests: TestNode[];
}

const SUITE = new Set(['describe', 'suite']);
const CASE = new Set(['test', 'it']);
const MODIFIERS = new Set(['skip', 'only', 'todo']);

export { testFiles };

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

/** What a test file starts at least, by the names it imports (from the test helpers, the dev server's tooling, @temporalio/testing). */
function startsOf(source: ts.SourceFile): Group {
  const imported = new Set<string>();
  for (const st of source.statements) {
    const bindings = ts.isImportDeclaration(st) ? st.importClause?.namedBindings : undefined;
    if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) imported.add(el.name.text);
  }
  const any = (names: string[]) => names.some((n) => imported.has(n));
  if (any(['spawnWorker', 'launch', 'chromiumPath'])) return 'processes';
  if (any(['startDevEnv', 'useDevEnv', 'DevServer', 'temporalCliPath'])) return 'dev-server';
  if (any(['startTimeSkippingEnv', 'TestWorkflowEnvironment'])) return 'time-skipping';
  return 'unit';
}

/**
 * Files not in the folder of what they start: outside the group folders, or in a folder other than
 * what their imports show. A file in test/processes/ may show less (it spawns by hand); any other
 * folder must match exactly, so that test/unit/ stays free of servers and each group means what it says.
 */
export function misplaced(files: TestFile[]): string[] {
  return files
    .filter((f) => f.group === undefined || (f.group !== 'processes' && f.group !== f.starts))
    .map((f) => `${f.file}: ${f.group ? `in test/${f.group}/` : 'in no group folder'}, its imports show it starts ${STARTS[f.starts]} (test/${f.starts}/)`);
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
  return { file, group: groupOf(file), starts: startsOf(source), tests };
}

/** Every test file of the project, parsed. */
export function readTests(root: string): TestFile[] {
  return testFiles(root).map((file) => parseTestFile(file, readFileSync(path.join(root, file), 'utf8')));
}

const countTests = (nodes: TestNode[]): number => nodes.reduce((n, t) => n + (t.kind === 'test' ? 1 : 0) + countTests(t.children), 0);

/** A name on one Markdown line, safe inside a table cell too. */
const md = (s: string) => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

/** How many tests in how many files, and how many of them in each group. */
export function testSummary(files: TestFile[]): string {
  const groups = GROUPS.map((g) => {
    const of = files.filter((f) => f.group === g);
    return `${countTests(of.flatMap((f) => f.tests))} in the ${of.length} files of \`test/${g}/\` (${STARTS[g]})`;
  });
  const loose = files.filter((f) => f.group === undefined);
  if (loose.length) groups.push(`${countTests(loose.flatMap((f) => f.tests))} in ${loose.length} files outside the group folders`);
  return `${countTests(files.flatMap((f) => f.tests))} tests in ${files.length} files, as written (a test declared in a loop counts once); by what they start: ${groups.join('; ')}.`;
}

/** The inventory in Markdown: a section per file, in run order, its describe blocks and tests as a nested list. */
export function testInventory(files: TestFile[]): string {
  const list = (nodes: TestNode[], depth: number): string[] =>
    nodes.flatMap((n) => [`${'  '.repeat(depth)}- ${n.kind === 'describe' ? `**${md(n.name)}**` : md(n.name)}`, ...list(n.children, depth + 1)]);
  const out = [testSummary(files), ''];
  for (const f of files) {
    const n = countTests(f.tests);
    const starts = f.group ? `starts ${STARTS[f.group]}` : 'in no group folder';
    out.push(`### \`${f.file}\``, '', `${n} ${n === 1 ? 'test' : 'tests'}; ${starts}.`, '', ...list(f.tests, 0), '');
  }
  return out.join('\n').trimEnd();
}

/** A wall time as people read it: `8.2 s`, `3 min 05 s`. */
export function wallTime(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

const row = (...cells: unknown[]) => `| ${cells.map(String).join(' | ')} |`;
const sum = (ds: FileDuration[]) => ds.reduce((n, d) => n + d.ms, 0);

/**
 * The durations section: from test/results/durations.json, which runs measured which files (when, on
 * how many cores, by which command), the total by group, then every file measured, slowest first,
 * and the files not measured yet. Entries of files that no longer exist are left out.
 */
export function testDurations(root: string): string {
  const results = readDurations(root);
  if (!results) return `_No durations yet: run \`npm test\` (or a part, \`npm test -- test/unit\`), which writes \`${DURATIONS}\` and this section._`;
  const files = testFiles(root);
  const present = new Set(files);
  const entries = results.files.filter((d) => present.has(d.file));
  const runs = [...new Map(entries.map((d) => [`${d.at} ${d.command}`, d])).values()].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const runOf = (d: FileDuration) => runs.findIndex((r) => r.at === d.at && r.command === d.command) + 1;
  const missing = files.filter((f) => !entries.some((d) => d.file === f));
  const failed = entries.filter((d) => !d.passed).length;
  const out = [
    `From \`${DURATIONS}\`: ${entries.length} of ${files.length} test files measured, ${wallTime(sum(entries))} in all` +
      `${failed ? `; **${failed} of them failed** in the run that measured them` : ''}.`,
    '',
    row('run', 'command', 'started (UTC)', 'machine', 'files', 'total'),
    row('---', '---', '---', '---', '---', '---'),
    ...runs.map((r, i) => {
      const of = entries.filter((d) => runOf(d) === i + 1);
      return row(i + 1, `\`${r.command}\``, r.at.slice(0, 16).replace('T', ' '), `${r.cpus} cores, Node ${r.node}`, of.length, wallTime(sum(of)));
    }),
    '',
    row('group', 'starts', 'files', 'measured', 'total'),
    row('---', '---', '---', '---', '---'),
    ...GROUPS.map((g) => {
      const of = entries.filter((d) => groupOf(d.file) === g);
      return row(`\`test/${g}/\``, STARTS[g], files.filter((f) => groupOf(f) === g).length, of.length, of.length ? wallTime(sum(of)) : '–');
    }),
    '',
    row('file', 'group', 'wall time', 'result', 'run'),
    row('---', '---', '---', '---', '---'),
    ...[...entries]
      .sort((a, b) => b.ms - a.ms || (a.file < b.file ? -1 : 1))
      .map((d) => row(`\`${d.file}\``, groupOf(d.file) ?? '–', wallTime(d.ms), d.passed ? 'passed' : '**failed**', runOf(d))),
  ];
  if (missing.length) {
    out.push(
      '',
      `Not measured yet (${missing.length}): ${missing.map((f) => `\`${f}\``).join(', ')}. ` +
        `\`npm test\` measures them all; \`npm test -- <path>\` the files it runs.`,
    );
  }
  return out.join('\n');
}
