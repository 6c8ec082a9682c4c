import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunResult } from '../../src/core/run-types';
import { argChanges, diffRun, effectChanges, parseFailIf, summarize } from '../../src/shadow/diff';
import { whyNotShadowed } from '../../src/core/shadow';

/** The shadow diff's rules (src/shadow/diff.ts) without a server: effects step by step, reasons, sums, `--fail-if`. */
const result = (over: Partial<RunResult> & { staged?: { effect: string; args: Record<string, unknown> }[]; answer?: unknown; extra?: object }): RunResult => {
  const { staged, answer, extra, ...rest } = over;
  return {
    runKey: 'reporter@e1',
    eventKey: 'e1',
    agent: 'reporter',
    wakeKey: 'c-1',
    terminalReason: 'success',
    summary: '',
    deliveryIds: [],
    deliveryCount: 1,
    output: { answer, ...(staged ? { staged } : {}), ...extra },
    usage: { turns: 2, tokens: 100, toolCalls: 1, costUsd: 0.001, wallClockMs: 10 },
    ...rest,
  };
};

test('arguments differ by their JSON paths, nested and in lists', () => {
  assert.deepEqual(argChanges({ a: 1, b: { c: [1, 2] } }, { a: 1, b: { c: [1, 3] }, d: 'x' }), [
    { path: 'b.c[1]', before: 2, after: 3 },
    { path: 'd', after: 'x' },
  ]);
  assert.deepEqual(argChanges({ a: 1 }, { a: 1 }), []);
});

test('effects compare step by step: same effect → its arguments; another effect → removed and added; extra steps', () => {
  const post = (text: string) => ({ effect: 'post', args: { text } });
  const exp = { effect: 'export', args: { campaign: 'c-1' } };
  assert.deepEqual(effectChanges([post('a'), exp], [post('a'), exp]), []);
  assert.deepEqual(effectChanges([post('a'), exp], [post('b'), exp]), [
    { step: 0, effect: 'post', change: 'args', args: [{ path: 'text', before: 'a', after: 'b' }] },
  ]);
  assert.deepEqual(effectChanges([post('a'), exp], [exp]), [
    { step: 0, effect: 'post', change: 'removed', args: { text: 'a' } },
    { step: 0, effect: 'export', change: 'added', args: { campaign: 'c-1' } },
    { step: 1, effect: 'export', change: 'removed', args: { campaign: 'c-1' } },
  ]);
  assert.deepEqual(effectChanges([], [post('a')]), [{ step: 0, effect: 'post', change: 'added', args: { text: 'a' } }]);
});

test("a run a person ended is not counted as a changed reason; a shadow's escalation is new", () => {
  const rejected = result({ terminalReason: 'blocked', extra: { decision: { approved: false, who: 'ana' } } });
  const d = diffRun(rejected, result({}), 'shadow/s/reporter@e1');
  assert.equal(d.terminalReason.changed, false);
  assert.match(d.terminalReason.note ?? '', /person decided/);
  const escalated = diffRun(result({}), result({ terminalReason: 'escalated' }), 'shadow/s/reporter@e1');
  assert.equal(escalated.terminalReason.changed, true);
  assert.equal(escalated.newEscalation, true);
});

test('the summary counts changed wakes and sums usage; --fail-if reads counts, shares and deltas', () => {
  const same = diffRun(result({ staged: [{ effect: 'post', args: { text: 'a' } }] }), result({ staged: [{ effect: 'post', args: { text: 'a' } }] }), 's1');
  const changed = diffRun(
    result({ staged: [{ effect: 'post', args: { text: 'a' } }] }),
    result({ staged: [{ effect: 'post', args: { text: 'b' } }], usage: { turns: 3, tokens: 150, toolCalls: 1, costUsd: 0.002, wallClockMs: 1 } }),
    's2',
  );
  const s = summarize([same, changed, same, same]);
  assert.equal(s.wakes, 4);
  assert.equal(s.changedEffects, 1);
  assert.equal(s.changedReason, 0);
  assert.deepEqual(s.tokens, { before: 400, after: 450, delta: 50 });
  assert.deepEqual(s.turns, { before: 8, after: 9, delta: 1 });
  assert.equal(s.costUsd.delta, 0.001);
  assert.equal(parseFailIf('changedEffects>20%').crossed(s), true, '1 of 4 is 25%');
  assert.equal(parseFailIf('changedEffects>25%').crossed(s), false);
  assert.equal(parseFailIf('changedEffects >= 1').crossed(s), true);
  assert.equal(parseFailIf('tokenDelta>100').crossed(s), false);
  assert.equal(parseFailIf('newEscalations>0').crossed(s), false);
  assert.throws(() => parseFailIf('changed>5%'), /unknown figure "changed"/);
  assert.throws(() => parseFailIf('costDelta>5%'), /only a count of wakes takes %/);
  assert.throws(() => parseFailIf('changedEffects 5'), /not <figure><op><number>/);
});

test('a recorded run its shadow could not replay faithfully is listed as not shadowed, with why', () => {
  const input = { runKey: 'reporter@e1', origin: { kind: 'event' as const } };
  assert.equal(whyNotShadowed(input, result({})), undefined);
  assert.match(whyNotShadowed(input, result({ steered: ['e3'] })) ?? '', /steered into it/);
  assert.match(whyNotShadowed(input, result({ terminalReason: 'cancelled' })) ?? '', /cancelled/);
  assert.match(whyNotShadowed(input, undefined) ?? '', /no recorded result/);
  assert.match(whyNotShadowed(undefined, result({})) ?? '', /Schedule started/);
  for (const reason of ['discarded', 'duplicate', 'skipped'] as const)
    assert.match(whyNotShadowed(input, result({ terminalReason: reason })) ?? '', /without running the agent/, reason);
  const overflowing = { ...input, origin: { kind: 'batch' as const, coalescerId: 'c', absorbed: [], absorbedOverflow: 3 } };
  assert.match(whyNotShadowed(overflowing, result({})) ?? '', /3 events past its bound/);
});
