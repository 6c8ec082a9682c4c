import { test } from 'node:test';
import assert from 'node:assert/strict';
import { viewOf, type EvidenceCheck, type RolloutState, type RolloutStatus } from '../../src/core/rollout';
import { renderRolloutList, renderRolloutPage } from '../../src/console/rollout-page';
import { sideBySide } from '../../src/rollout/figures';
import { judgeAll } from '../../workflows/rollout/checks';
import { newRollout, transition } from '../../workflows/rollout/machine';

/* The rollout's operator page (src/console/rollout-page.ts) and its side-by-side figures: no server. */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const check: EvidenceCheck = { name: 'errors<b>', metric: 'non_success', margin: 0.1, minRuns: 2, onFail: 'finish' };
const stats = (runs: number, bad: number, usd = 0.01) => ({ runs, nonSuccess: bad, failures: bad, tokensPerRun: 100, usdPerRun: usd, effectsPerRun: 1 });
const statusOf = (m: RolloutState): RolloutStatus => ({ state: m, view: viewOf(m), everyMs: 30_000, checks: m.evidence ? judgeAll(m.checks, m.evidence) : [] });

function ramping(): RolloutState {
  let m = newRollout({ agent: 'triage', current: 'v1' });
  m = transition(
    m,
    { kind: 'start', candidate: 'v2<script>', share: 0.2, checks: [check], minRuns: 2, who: 'ann & co', reason: '<img src=x onerror=alert(1)>' },
    T0,
  ).state;
  return m;
}

test('the two versions side by side over the latest evidence, with the window and each verdict', () => {
  const m = transition(ramping(), { kind: 'evidence', sinceMs: T0, current: stats(10, 1), candidate: stats(4, 0, 0.02) }, T0 + 5000).state;
  const f = sideBySide(statusOf(m));
  assert.equal(f.since, new Date(T0).toISOString());
  assert.deepEqual(
    f.rows.map((r) => [r.label, r.current, r.candidate]),
    [
      ['runs closed', '10', '4'],
      ['non-success', '10% (1 of 10)', '0% (0 of 4)'],
      ['failed', '10% (1 of 10)', '0% (0 of 4)'],
      ['tokens per run', '100', '100'],
      ['USD per run', '0.01', '0.02'],
      ['effects per run', '1', '1'],
    ],
  );
  assert.deepEqual(
    f.checks.map((c) => c.status),
    ['pass'],
  );
  assert.deepEqual(sideBySide(statusOf(ramping())).rows, [], 'no evidence: no figures');
});

test('the page shows phase, share, figures, checks and history, every value escaped', () => {
  const m = transition(ramping(), { kind: 'evidence', sinceMs: T0, current: stats(10, 1), candidate: stats(4, 3) }, T0 + 5000).state;
  assert.equal(m.phase, 'rolled_back');
  const html = renderRolloutPage('tri<age>', statusOf(m));
  assert.match(html, /<b>rolled_back<\/b>/);
  assert.match(html, /Rollout of <code>tri&lt;age&gt;<\/code>/);
  assert.match(html, /candidate <code>v2&lt;script&gt;<\/code>/);
  assert.match(html, /<td>10% \(1 of 10\)<\/td><td>75% \(3 of 4\)<\/td>/);
  assert.match(html, /data-check="errors&lt;b&gt;".*class="fail">fail</);
  assert.match(html, /ann &amp; co/);
  assert.match(html, /check:errors&lt;b&gt;/, 'the rollback by itself is in the history, by its check');
  assert.match(html, /paged: <code>wakegate\/rollout\/triage\/1\/rollback<\/code>/);
  assert.doesNotMatch(html, /<script>|<img src=x|<age>/);
  // Newest first.
  assert.ok(html.indexOf('data-entry="2"') < html.indexOf('data-entry="1"'));
});

test('before any evidence each check is waiting; the list links each agent', () => {
  const html = renderRolloutPage('triage', statusOf(ramping()));
  assert.match(html, /no evidence taken yet/);
  assert.match(html, /class="waiting">waiting</);
  assert.match(html, /share 20%/);
  const list = renderRolloutList('q<1>', [{ agent: 'a b', view: viewOf(ramping()) }, { agent: 'quiet' }]);
  assert.match(list, /href="\/rollouts\/a%20b"/);
  assert.match(list, /ramping v2&lt;script&gt; at 20% of wake keys \(current v1\)/);
  assert.match(list, /no view published yet/);
  assert.match(list, /<code>q&lt;1&gt;<\/code>/);
  assert.match(renderRolloutList('q', []), /no rollout/);
});
