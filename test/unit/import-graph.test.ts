import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/*
 * No import cycles, type-only imports included. import-x/no-cycle in the lint holds value imports to
 * it but skips `import type`; a type cycle still ties the layers together (a workflow reaching an
 * activity module for a type reaches the gate and the client behind it), so this test walks every
 * import and re-export of the project's TypeScript, as TypeScript's own pre-processor lists them.
 */
const root = path.resolve(__dirname, '..', '..');
const skip = new Set(['node_modules', '.temporal', '.git', 'lib', 'bin']);

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (skip.has(name)) return [];
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

function resolveRelative(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  return [`${base}.ts`, path.join(base, 'index.ts'), base].find((c) => existsSync(c) && statSync(c).isFile() && c.endsWith('.ts'));
}

/** Every project module's imports of other project modules (value and type alike). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of tsFiles(root)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(
      file,
      importedFiles.flatMap((i) => resolveRelative(file, i.fileName) ?? []),
    );
  }
  return graph;
}

/** One cycle per strongly connected component with more than one module (or a self-import), as a path. */
function findCycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return cycles;
}

/** The same graph between folders: a file's edges become its folder's (within a folder, none). */
function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folder = (f: string) => path.relative(root, path.dirname(f)) || '.';
  const out = new Map<string, Set<string>>();
  for (const [from, tos] of graph) {
    const edges = out.get(folder(from)) ?? new Set<string>();
    for (const to of tos) if (folder(to) !== folder(from)) edges.add(folder(to));
    out.set(folder(from), edges);
  }
  return new Map([...out].map(([k, v]) => [k, [...v]]));
}

describe('import graph', () => {
  test('the cycle finder finds a planted cycle, type edges included', () => {
    const planted = new Map([
      ['activities/schedule.ts', ['src/gate/gate.ts']],
      ['src/gate/gate.ts', ['workflows/wake.ts']],
      ['workflows/wake.ts', ['activities/index.ts']],
      ['activities/index.ts', ['activities/schedule.ts']],
      ['workflows/ids.ts', []],
    ]);
    assert.deepEqual(findCycles(planted), [['activities/index.ts', 'activities/schedule.ts', 'src/gate/gate.ts', 'workflows/wake.ts']]);
  });

  test('the project has no import cycle, type-only imports included', () => {
    const graph = importGraph();
    const edges = [...graph.values()].reduce((n, e) => n + e.length, 0);
    // The walk really saw the project: a broken resolver would report no cycle over no edges.
    assert.ok(graph.size > 100 && edges > 300, `${graph.size} modules, ${edges} edges`);
    // Type-only imports are edges too: the activity proxies import nothing but the contracts' types.
    assert.deepEqual(graph.get(path.join(root, 'workflows', 'run', 'proxies.ts')), [
      path.join(root, 'src', 'core', 'contracts.ts'),
      path.join(root, 'src', 'core', 'failures.ts'),
    ]);
    const cycles = findCycles(graph).map((c) => c.map((f) => path.relative(root, f)));
    assert.deepEqual(cycles, [], `import cycles:\n${cycles.map((c) => c.join(' ⇄ ')).join('\n')}`);
  });

  test('no two folders import each other, even through others (type-only imports included)', () => {
    const folders = folderGraph(importGraph());
    assert.ok(
      folders.has(path.join('src', 'core')) && folders.has(path.join('workflows', 'run')) && folders.has(path.join('activities', 'commit')),
      [...folders.keys()].join(', '),
    );
    // The finder sees a folder cycle when there is one: the planted edge closes core → workflows/run → core.
    const planted = new Map(folders);
    planted.set(path.join('src', 'core'), [...(planted.get(path.join('src', 'core')) ?? []), path.join('workflows', 'run')]);
    assert.ok(findCycles(planted).some((c) => c.includes(path.join('src', 'core'))));
    const cycles = findCycles(folders);
    assert.deepEqual(cycles, [], `folder cycles:\n${cycles.map((c) => c.join(' ⇄ ')).join('\n')}`);
    // src/core/ is the bottom layer: it imports no other folder of the project.
    assert.deepEqual(folders.get(path.join('src', 'core')), []);
  });
});
