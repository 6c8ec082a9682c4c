import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { docFiles, ROOT, sectionsOf, staleDocs } from '../../tools/scripts/docs';
import { BENCHES } from '../../tools/scripts/docs-bench';
import { misplaced, parseTestFile, readTests, testDurations } from '../../tools/scripts/docs-tests';
import { groupOf } from '../../tools/scripts/test-groups';

// The docs' figures and test inventory are generated (npm run docs); these tests fail when they are stale.

test('every generated section of the docs is what the results files and test files say now', () => {
  assert.deepEqual(staleDocs(ROOT), [], 'stale generated sections: run `npm run docs` and commit the result');
});

test('every benchmark writes a results file, and the docs show each one', () => {
  const files = readdirSync(path.join(ROOT, 'tools', 'bench', 'results'))
    .filter((f) => f.endsWith('.json'))
    .sort();
  // bench:coalesce over another key count writes a file of its own (coalesce-<n>-keys.json), shown beside the default's.
  const atScale = files.filter((f) => /^coalesce-\d+-keys\.json$/.test(f));
  assert.deepEqual(
    files.filter((f) => !atScale.includes(f)),
    [...BENCHES].map((b) => `${b}.json`).sort(),
  );
  const benchmarks = readFileSync(path.join(ROOT, 'docs', 'BENCHMARKS.md'), 'utf8');
  for (const f of atScale) assert.ok(benchmarks.includes(`BENCH_ONE_EACH_KEYS=${/\d+/.exec(f)![0]}`), `docs/BENCHMARKS.md does not show ${f}`);
  const shown = [...sectionsOf(ROOT).values()].flat();
  for (const b of BENCHES) assert.ok(shown.includes(`bench:${b}`), `no <!-- generated:bench:${b} --> section in the docs`);
  assert.ok(shown.includes('tests'), 'no <!-- generated:tests --> section in the docs');
  assert.ok(shown.includes('tests:durations'), 'no <!-- generated:tests:durations --> section in the docs');
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
  assert.equal(parsed.group, undefined);
  assert.equal(parsed.starts, 'unit');
});

test('every test file sits in the folder of what it starts: its imports show no more, and outside test/processes/ no less', () => {
  assert.deepEqual(misplaced(readTests(ROOT)), []);
  assert.equal(groupOf('test/dev-server/gate.test.ts'), 'dev-server');
  assert.equal(groupOf('test/gate.test.ts'), undefined);
  const spawning = parseTestFile(
    'test/dev-server/x.test.ts',
    "import { spawnWorker } from '../helpers/worker-process';\nimport { startDevEnv } from '../helpers/env';",
  );
  assert.deepEqual(misplaced([spawning]), [
    'test/dev-server/x.test.ts: in test/dev-server/, its imports show it starts real processes besides a dev server: workers, ingresses or queue consumers to SIGKILL, the soak, or a browser (test/processes/)',
  ]);
});

test('the durations section says where its figures come from, or how to make them', () => {
  const empty = mkdtempSync(path.join(tmpdir(), 'wakegate-docs-'));
  try {
    mkdirSync(path.join(empty, 'test', 'unit'), { recursive: true });
    writeFileSync(path.join(empty, 'test', 'unit', 'a.test.ts'), '');
    assert.match(testDurations(empty), /No durations yet: run `npm test`/);
    mkdirSync(path.join(empty, 'test', 'results'));
    const entry = { group: 'unit', passed: true, at: '2026-12-06T05:00:00.000Z', cpus: 2, node: 'v20.20.2', command: 'npm test -- test/unit' };
    const files = [
      { file: 'test/unit/a.test.ts', ms: 1500, ...entry },
      { file: 'test/unit/gone.test.ts', ms: 99_000, ...entry },
    ];
    writeFileSync(path.join(empty, 'test', 'results', 'durations.json'), JSON.stringify({ about: '', files }));
    writeFileSync(path.join(empty, 'test', 'unit', 'b.test.ts'), '');
    const section = testDurations(empty);
    assert.match(section, /1 of 2 test files measured, 1\.5 s in all/);
    assert.match(section, /\| 1 \| `npm test -- test\/unit` \| 2026-12-06 05:00 \| 2 cores, Node v20\.20\.2 \| 1 \| 1\.5 s \|/);
    assert.match(section, /Not measured yet \(1\): `test\/unit\/b\.test\.ts`/);
    assert.doesNotMatch(section, /gone/, 'an entry of a file that no longer exists is left out');
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
