import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { closedRunOf, evidenceOf, statsOf } from '../../activities/rollout/evidence';
import { WakeCostUsd, WakeEffects, WakeTerminalReason, WakeTokens, WakeVersion } from '../../src/core/search-attributes';

/*
 * The rollout's evidence from visibility (activities/rollout/evidence.ts): what each closed run
 * counts as, and the figures per version. No server: the listing is the activity's, this is the counting.
 */

const info = (workflowId: string, pairs: SearchAttributePair[]) => ({ workflowId, typedSearchAttributes: new TypedSearchAttributes(pairs) });

test('a closed run counts by the version it recorded; none recorded is the current version', () => {
  const pinned = closedRunOf(
    info('run-1', [
      { key: WakeVersion, value: 'v2' },
      { key: WakeTerminalReason, value: 'success' },
      { key: WakeTokens, value: 120 },
      { key: WakeCostUsd, value: 0.25 },
      { key: WakeEffects, value: 2 },
    ]),
    'v1',
  );
  assert.deepEqual(pinned, { version: 'v2', reason: 'success', tokens: 120, costUsd: 0.25, effects: 2 });
  assert.deepEqual(closedRunOf(info('run-2', []), 'v1'), { version: 'v1', reason: 'failed', tokens: 0, costUsd: 0, effects: 0 }, 'no reason: failed');
});

test('live shadows and schedule windows that did not run are not runs to judge', () => {
  assert.equal(closedRunOf(info('shadow/live/run-1', [{ key: WakeTerminalReason, value: 'success' }]), 'v1'), undefined);
  assert.equal(closedRunOf(info('run-3', [{ key: WakeTerminalReason, value: 'duplicate' }]), 'v1'), undefined);
  assert.equal(closedRunOf(info('run-4', [{ key: WakeTerminalReason, value: 'skipped' }]), 'v1'), undefined);
});

test('figures per version: shares of runs by reason, spend and effects per run; a third version is left out', () => {
  const run = (version: string, reason: string, tokens = 10, costUsd = 0.1, effects = 1) => ({ version, reason, tokens, costUsd, effects });
  const e = evidenceOf(
    [run('v1', 'success'), run('v1', 'no_op', 30, 0.3, 3), run('v2', 'failed', 40, 0.4, 0), run('v2', 'success', 20, 0.2, 2), run('v0', 'failed')],
    'v1',
    'v2',
  );
  assert.deepEqual(e.current, { runs: 2, nonSuccess: 1, failures: 0, tokensPerRun: 20, usdPerRun: 0.2, effectsPerRun: 2 });
  assert.deepEqual(e.candidate, { runs: 2, nonSuccess: 1, failures: 1, tokensPerRun: 30, usdPerRun: 0.30000000000000004, effectsPerRun: 1 });
  assert.deepEqual(statsOf([]), { runs: 0, nonSuccess: 0, failures: 0, tokensPerRun: 0, usdPerRun: 0, effectsPerRun: 0 });
});
