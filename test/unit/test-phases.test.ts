import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ALONE, byGroup, groupOf, phasesOf, readDurations, testFiles } from '../../tools/scripts/test-groups';

/* How `npm test` lays the suite out over phases and lanes (tools/scripts/test-groups.ts `phasesOf`). */

const root = path.resolve(__dirname, '..', '..');
const files = testFiles(root);
const measured = new Map((readDurations(root)?.files ?? []).map((d) => [d.file, d.ms]));
const phases = phasesOf(files, (f) => measured.get(f));

test('every test file runs exactly once, in one lane of one phase', () => {
  const laid = phases.flatMap((p) => p.lanes.flat());
  assert.deepEqual([...laid].sort(byGroup), files);
});

test('no two processes files ever run at once, and the soak runs with nothing beside it', () => {
  for (const { lanes } of phases) {
    const withProcesses = lanes.filter((l) => l.some((f) => groupOf(f) === 'processes'));
    assert.ok(withProcesses.length <= 1, `processes files in two lanes of one phase: ${JSON.stringify(withProcesses)}`);
    for (const f of ALONE) if (lanes.flat().includes(f)) assert.deepEqual(lanes, [[f]]);
  }
});

test('the two lanes of the main phase are within the longest file of each other, by last measured wall time', () => {
  const server = phases.find((p) => p.lanes.flat().some((f) => groupOf(f) === 'dev-server'))!;
  assert.equal(server.lanes.length, 2);
  const weight = (f: string) => measured.get(f) ?? 60_000;
  const [a, b] = server.lanes.map((l) => l.reduce((s, f) => s + weight(f), 0));
  const longest = Math.max(...server.lanes.flat().map(weight));
  assert.ok(Math.abs(a! - b!) <= longest, `lanes of ${a} ms and ${b} ms`);
});

test('unmeasured files weigh a minute each and still land in a lane', () => {
  const laid = phasesOf(['test/unit/a.test.ts', 'test/dev-server/b.test.ts', 'test/dev-server/c.test.ts', 'test/processes/d.test.ts'], () => undefined);
  assert.deepEqual(laid, [
    {
      lanes: [
        ['test/unit/a.test.ts', 'test/processes/d.test.ts'],
        ['test/dev-server/b.test.ts', 'test/dev-server/c.test.ts'],
      ],
    },
  ]);
});
