import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { docFiles, ROOT, sectionsOf, staleDocs } from '../../tools/scripts/docs';
import { BENCHES } from '../../tools/scripts/docs-bench';
import { parseTestFile } from '../../tools/scripts/docs-tests';

// The docs' figures and test inventory are generated (npm run docs); these tests fail when they are stale.

test('every generated section of the docs is what the results files and test files say now', () => {
  assert.deepEqual(staleDocs(ROOT), [], 'stale generated sections: run `npm run docs` and commit the result');
});

test('every benchmark writes a results file, and the docs show each one', () => {
  const files = readdirSync(path.join(ROOT, 'tools', 'bench', 'results'))
    .filter((f) => f.endsWith('.json'))
    .sort();
  assert.deepEqual(files, [...BENCHES].map((b) => `${b}.json`).sort());
  const shown = [...sectionsOf(ROOT).values()].flat();
  for (const b of BENCHES) assert.ok(shown.includes(`bench:${b}`), `no <!-- generated:bench:${b} --> section in the docs`);
  assert.ok(shown.includes('tests'), 'no <!-- generated:tests --> section in the docs');
});

test('outside generated sections the docs quote no measured rate or ratio', () => {
  // A rate (`140 starts/s`) or a ratio (`0.92×`) written by hand goes stale; it belongs in a results file.
  const figure = /\b\d[\d,.]*\s*(?:starts|events|accepts|messages|runs|requests)\/s\b|\b\d+(?:\.\d+)?\s*×(?!\s*\d)/;
  for (const file of docFiles(ROOT)) {
    const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/<!-- generated:[\w:-]+ -->\n[\s\S]*?<!-- \/generated -->/g, '');
    const hit = text.split('\n').find((line) => figure.test(line));
    assert.equal(hit, undefined, `${file} quotes a figure by hand: ${hit}`);
  }
});

test('the test inventory reads node:test calls only, nested, with template names as written', () => {
  const parsed = parseTestFile(
    'x.test.ts',
    [
      "import { describe, test } from 'node:test';",
      "describe('outer', () => {",
      "  test('plain', () => { assert.ok(/x/.test('x')); });",
      '  for (const what of ["a", "b"]) test(`each ${what}`, () => {});',
      '});',
      "const other = { test: (_: string) => 0 }; other.test('not a test');",
    ].join('\n'),
  );
  assert.deepEqual(parsed.tests, [
    {
      kind: 'describe',
      name: 'outer',
      children: [
        { kind: 'test', name: 'plain', children: [] },
        { kind: 'test', name: 'each ${what}', children: [] },
      ],
    },
  ]);
  assert.equal(parsed.server, 'no server');
});
