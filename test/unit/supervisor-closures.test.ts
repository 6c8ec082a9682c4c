import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TypedSearchAttributes } from '@temporalio/common';
import { closuresOf } from '../../activities/supervisor/supervise';
import { WakeAgent, WakeCostUsd, WakeTerminalReason, WakeTokens } from '../../src/core/search-attributes';

const run = (reason: string | undefined, closeMs: number) => ({
  closeTime: new Date(closeMs),
  typedSearchAttributes: new TypedSearchAttributes([
    { key: WakeAgent, value: 'canary' },
    { key: WakeCostUsd, value: 0.5 },
    { key: WakeTokens, value: 10 },
    ...(reason ? [{ key: WakeTerminalReason, value: reason }] : []),
  ]),
});

test("the supervisor judges runs, not a schedule's windows that ran nothing: duplicate and skipped are left out, a run with no reason is failed", () => {
  const closures = closuresOf([run('success', 3000), run('duplicate', 1000), run(undefined, 2000), run('skipped', 500), run('escalated', 1500)], 9000);
  assert.deepEqual(
    closures.map((c) => [c.reason, c.closeMs]),
    [
      ['escalated', 1500],
      ['failed', 2000],
      ['success', 3000],
    ],
  );
  assert.deepEqual(closures[0], { agent: 'canary', reason: 'escalated', closeMs: 1500, costUsd: 0.5, tokens: 10 });
});
