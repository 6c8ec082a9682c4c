import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordedTools, type RecordedToolCall } from '../../src/core/recorded-tools';

const answer = (content: string) => ({ content, changed: false });

test('arguments match whatever the order of their keys, at any depth', () => {
  const tools = new RecordedTools([{ tool: 'search', args: { q: 'x', filter: { a: 1, b: [2, { y: 1, x: 0 }] } }, result: answer('hit') }]);
  assert.deepEqual(tools.answer('search', { filter: { b: [2, { x: 0, y: 1 }], a: 1 }, q: 'x' }), answer('hit'));
  assert.deepEqual(tools.counts, { recorded: 1, live: 0 });
});

test('a call the recorded run never made (other arguments, another tool, another item) is made live, and counted so', () => {
  const calls: RecordedToolCall[] = [
    { tool: 'search', args: { q: 'x' }, result: answer('hit') },
    { tool: 'read_dashboard', item: 'overview', args: {}, result: answer('overview') },
  ];
  const tools = new RecordedTools(calls);
  assert.equal(tools.answer('search', { q: 'y' }), undefined);
  assert.equal(tools.answer('lookup', { q: 'x' }), undefined);
  assert.equal(tools.answer('read_dashboard', {}, 'spend'), undefined);
  assert.equal(tools.answer('read_dashboard', {}), undefined, 'an item is part of the call');
  assert.deepEqual(tools.answer('read_dashboard', {}, 'overview'), answer('overview'));
  assert.deepEqual(tools.counts, { recorded: 1, live: 4 });
});

test('the same call made again takes the next recorded answer, then the last one again', () => {
  const tools = new RecordedTools([
    { tool: 'poll', args: {}, result: answer('first') },
    { tool: 'poll', args: {}, result: answer('second') },
  ]);
  assert.deepEqual(
    [tools.answer('poll', {}), tools.answer('poll', {}), tools.answer('poll', {})].map((r) => r?.content),
    ['first', 'second', 'second'],
  );
  assert.deepEqual(tools.counts, { recorded: 3, live: 0 });
});

test("a subagent gets its item's calls, and its counts add to the run's", () => {
  const calls: RecordedToolCall[] = [
    { tool: 'read_dashboard', item: 'a', args: {}, result: answer('a') },
    { tool: 'read_dashboard', item: 'b', args: {}, result: answer('b') },
    { tool: 'search', args: {}, result: answer('s') },
  ];
  assert.deepEqual(
    RecordedTools.forItem(calls, 'b').map((c) => c.result.content),
    ['b'],
  );
  const run = new RecordedTools(calls);
  run.add({ recorded: 2, live: 1 });
  assert.deepEqual(run.counts, { recorded: 2, live: 1 });
});
