import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ExitCode, exitForRun } from '../../src/cli/output';
import { TERMINAL_REASONS } from '../../src/core/run-types';

const ROOT = path.resolve(__dirname, '..', '..');

test('emit --wait exits by how the run ended: 0 did its work or had none, 7 failed, 8 stopped short by a rule or a person', () => {
  const byCode = new Map<number, string[]>();
  for (const reason of TERMINAL_REASONS) byCode.set(exitForRun(reason), [...(byCode.get(exitForRun(reason)) ?? []), reason]);
  assert.deepEqual(Object.fromEntries(byCode), {
    0: ['success', 'no_op', 'duplicate', 'skipped'],
    7: ['failed'],
    8: ['budget_exhausted', 'blocked', 'escalated', 'cancelled', 'discarded'],
  });
  assert.equal(exitForRun(undefined), ExitCode.ok, 'an event settled with nothing to wait for');
});

test("the run's exit codes keep every older code's meaning: 0 ok, 1 error, 2 usage, 3 refused, 4 unreachable, 5 timed out, 6 threshold", () => {
  assert.deepEqual(
    [ExitCode.ok, ExitCode.error, ExitCode.badInput, ExitCode.refused, ExitCode.unreachable, ExitCode.timedOut, ExitCode.thresholdCrossed],
    [0, 1, 2, 3, 4, 5, 6],
  );
  assert.deepEqual([ExitCode.runFailed, ExitCode.runStopped], [7, 8]);
});

test('OPERATIONS.md and both READMEs give exit 7 and 8 each with the reasons that lead to it', () => {
  for (const file of ['docs/OPERATIONS.md', 'README.md', 'PACKAGE-README.md']) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    for (const code of [ExitCode.runFailed, ExitCode.runStopped]) {
      const row = text.split('\n').find((l) => l.startsWith(`| ${code} |`));
      assert.ok(row, `${file} has no exit ${code} row`);
      for (const reason of TERMINAL_REASONS.filter((r) => exitForRun(r) === code))
        assert.ok(row.includes(`\`${reason}\``), `${file}: exit ${code} row lacks ${reason}`);
    }
  }
});
