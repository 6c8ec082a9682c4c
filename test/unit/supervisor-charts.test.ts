import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SupervisorPolicy, SupervisorStatus } from '../../src/core/supervisor-types';
import { renderSupervisorPage } from '../../src/console/supervisor-page';
import type { SupervisorView } from '../../src/supervisor/view';
import { start, statusOf, transition, type Input, type MachineState } from '../../workflows/supervisor/machine';

/*
 * The `/supervisor` page's charts, rendered from a status the supervisor's own machine made (no
 * server): the wakes per minute of the fleet and of each agent against the storm threshold, and
 * each cap's window bucket by bucket with how full it is. Their figures are read back from the
 * markup, and a name from users' code is shown escaped, never as markup.
 */

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const HOSTILE = '<img src=x onerror=alert(1)>';
const policy: SupervisorPolicy = {
  storm: { fleetPerMinute: 8, agentPerMinute: 5, rationale: 'test: more than 8 wakes a minute is a storm' },
  errorRate: { windowMs: 60_000, minRuns: 10, threshold: 0.5, reasons: ['failed'], rationale: 'test' },
  caps: {
    fleet: [{ windowMs: 3_600_000, wakes: 4, rationale: 'test: 4 runs an hour' }],
    agents: { [HOSTILE]: [{ windowMs: 60_000, wakes: 100, rationale: 'test' }] },
  },
  onTrip: {},
  overCap: {},
  observeEveryMs: 5000,
  holdRecheckMs: 1000,
};

function statusAfter(inputs: [number, Input][], atMs: number, charts = true): SupervisorStatus {
  let m: MachineState = start({ taskQueue: 'q', policy }, T0);
  for (const [ms, input] of inputs) m = transition(m, input, T0 + ms).state;
  return statusOf(m, T0 + atMs, { charts });
}
const view = (status: SupervisorStatus): SupervisorView => ({
  supervisorId: status.supervisorId,
  running: true,
  status,
  live: 0,
  liveShadows: 0,
  held: { total: 0, byAgent: {} },
});

/** The first `<svg ...>...</svg>` whose opening tag has all of these attributes. */
function svgWith(html: string, ...attrs: string[]): string {
  const found = [...html.matchAll(/<svg[^>]*>[\s\S]*?<\/svg>/g)].map((m) => m[0]).find((svg) => attrs.every((a) => svg.slice(0, svg.indexOf('>')).includes(a)));
  assert.ok(found, `an <svg> with ${attrs.join(' ')}`);
  return found;
}
const all = (svg: string, attr: string) => [...svg.matchAll(new RegExp(`${attr}="([^"]*)"`, 'g'))].map((m) => m[1]!);

test('the page draws the wakes per minute against the storm threshold, fleet and per agent', () => {
  // 3 wakes of canary in the first minute, 7 of canary and 2 of deps in the second (canary over its 5, tripping the breaker).
  const status = statusAfter(
    [
      [5_000, { kind: 'wakes', counts: { canary: 3 } }],
      [65_000, { kind: 'wakes', counts: { canary: 7, deps: 2 } }],
    ],
    70_000,
  );
  assert.equal(status.mode, 'halted');
  const html = renderSupervisorPage(view(status));
  const fleet = svgWith(html, 'data-chart="storm"', 'data-scope="*"');
  assert.match(fleet, /data-threshold="8" data-total="12"/);
  assert.deepEqual(all(fleet, 'data-wakes').slice(-2), ['3', '9']);
  assert.deepEqual(all(fleet, 'data-wakes').length, 10, 'ten minutes');
  assert.deepEqual(all(fleet, 'data-minute').slice(-2), ['2026-12-01T10:00:00.000Z', '2026-12-01T10:01:00.000Z']);
  assert.match(fleet, /class="minute over"[^>]*data-minute="2026-12-01T10:01:00.000Z" data-wakes="9"/, 'the minute over the threshold is marked');
  assert.match(fleet, /<title>10:01 UTC: 9 wakes so far<\/title>/);
  assert.match(fleet, /storm: over 8 a minute/);
  const canary = svgWith(html, 'data-chart="storm"', 'data-scope="canary"');
  assert.match(canary, /data-threshold="5" data-total="10"/);
  assert.deepEqual(all(canary, 'data-wakes').slice(-2), ['3', '7']);
  assert.deepEqual(all(svgWith(html, 'data-scope="deps"'), 'data-wakes').slice(-2), ['0', '2']);
  assert.match(html, /Wakes that started a run at the gate in each of the last 10 minutes/);
});

test("the page draws each cap's window bucket by bucket, and how full it is; one at its limit in red", () => {
  const status = statusAfter(
    [
      [1_000, { kind: 'lease', requests: { canary: 1 } }],
      [30_000, { kind: 'lease', requests: { canary: 2 } }],
      [40_000, { kind: 'lease', requests: { canary: 3 } }],
    ],
    50_000,
  );
  const html = renderSupervisorPage(view(status));
  const runs = svgWith(html, 'data-chart="counter"', 'data-counter="runs started|*"');
  assert.match(runs, /data-value="4" data-limit="4"/, 'the fleet cap of 4 an hour is full: the last lease got 1 of 3');
  // An hour in buckets of a minute: every lease of the first minute falls in the bucket of 10:00.
  assert.deepEqual(all(runs, 'data-start'), ['2026-12-01T10:00:00.000Z']);
  assert.deepEqual(all(runs, 'data-amount'), ['4']);
  assert.match(runs, /class="gauge over"[^>]*width="240"/);
  assert.match(runs, /now · 100% of the limit/);
  assert.match(runs, /<title>runs started \(fleet\) over the last 1 h: 4 of 4<\/title>/);
  const storm = svgWith(html, 'data-chart="counter"', 'data-counter="wakes per minute|*"');
  assert.match(storm, /data-value="0" data-limit="8"/);
  assert.equal(all(storm, 'data-start').length, 0, 'no wakes, no bars');
  assert.match(storm, /class="gauge"[^>]*width="0"/);
});

test("names from users' code are escaped in the charts; a status without the windows (an update's answer) draws none", () => {
  const status = statusAfter([[1_000, { kind: 'wakes', counts: { [HOSTILE]: 2 } }]], 2_000);
  const html = renderSupervisorPage(view(status));
  assert.ok(!html.includes(HOSTILE), 'never as markup');
  const escaped = '&lt;img src=x onerror=alert(1)&gt;';
  assert.match(svgWith(html, 'data-chart="storm"', `data-scope="${escaped}"`), /data-total="2"/);
  assert.ok(html.includes(`<figcaption>${escaped}</figcaption>`));
  svgWith(html, 'data-chart="counter"', `data-counter="runs started|${escaped}"`);

  const plain = renderSupervisorPage(view(statusAfter([[1_000, { kind: 'wakes', counts: { canary: 2 } }]], 2_000, false)));
  assert.doesNotMatch(plain, /<svg/);
  assert.doesNotMatch(plain, /Wakes per minute/);
  assert.match(plain, /<tr data-counter="wakes per minute\|\*">/, 'the table of counters stays');
});
