import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { admitLines } from '../../src/cli/emit-file';
import { answered, failed, fileExitCode, parseEventLine, FileTally } from '../../src/cli/ndjson';
import { residentCanAnswer } from '../../src/cli/resident-link';
import { isUnreachable } from '../../src/cli/unreachable';
import { GateInputError } from '../../src/gate/errors';
import type { GateAnswer } from '../../src/core/decision';

const event = (entity: string) => ({ source: 'ping', entity, type: 't', occurredAt: '2026-12-02T14:05:00Z' });
const answer = (entity: string, decision: GateAnswer['decision'] = 'started'): GateAnswer =>
  ({ decision, agent: 'canary', wakeKey: entity, runKey: `canary@${entity}`, eventKey: entity, fingerprint: 'f', wakes: [] }) as GateAnswer;

describe('emit --file: a line to an event', () => {
  test('an object is an event; `agent` is taken out of it; a blank line is no event', () => {
    assert.deepEqual(parseEventLine(JSON.stringify({ ...event('a'), agent: 'canary' }), 4), { line: 4, event: event('a'), agent: 'canary' });
    assert.deepEqual(parseEventLine(JSON.stringify(event('b')), 1), { line: 1, event: event('b') });
    assert.equal(parseEventLine('   ', 2), undefined);
  });

  test('not JSON, not an object, a bad agent, too long: bad input naming the line', () => {
    for (const [text, pattern] of [
      ['{nope', /line 7: not valid JSON/],
      ['[1,2]', /line 7: must be a JSON object/],
      ['"x"', /line 7: must be a JSON object/],
      ['{"agent":5}', /line 7: "agent" must be the name of an agent/],
      [JSON.stringify({ blob: 'x'.repeat(3 * 1024 * 1024) }), /line 7: over \d+ bytes/],
    ] as const) {
      const parsed = parseEventLine(text, 7);
      assert.ok(parsed && 'error' in parsed, text.slice(0, 20));
      assert.ok(parsed.error instanceof GateInputError);
      assert.match(parsed.error.message, pattern);
    }
  });
});

describe('emit --file: answer lines and the exit status', () => {
  test('an answer line is the gate answer under its line number, on one line', () => {
    const { text, outcome } = answered(3, answer('a'));
    assert.equal(outcome, 'admitted');
    assert.ok(!text.includes('\n'));
    assert.deepEqual(JSON.parse(text), { line: 3, ...answer('a') });
    assert.equal(answered(3, answer('a', 'mismatch')).outcome, 'refused');
    assert.equal(answered(3, answer('a', 'refused')).outcome, 'refused');
    for (const d of ['completed', 'in_progress', 'coalesced', 'skipped', 'stale', 'held'] as const)
      assert.equal(answered(1, answer('a', d)).outcome, 'admitted', d);
  });

  test('a failed line: bad input by its code (also from another copy of the gate), unreachable, or an error', () => {
    const bad = failed(2, new GateInputError('unknown_source', 'unknown source "x"', [{ path: 'source', message: 'unknown source' }]), isUnreachable);
    assert.equal(bad.outcome, 'bad');
    assert.deepEqual(JSON.parse(bad.text), {
      line: 2,
      error: { code: 'unknown_source', message: 'unknown source "x"', issues: [{ path: 'source', message: 'unknown source' }] },
    });
    // The deployment's gate throws its own copy of the class (the package it imports, not this bundle's).
    const other = Object.assign(new Error('invalid payload'), { name: 'GateInputError', code: 'invalid_payload', issues: [] });
    assert.equal(failed(2, other, isUnreachable).outcome, 'bad');
    const down = Object.assign(new Error('connection refused'), { code: 14 });
    assert.equal(failed(2, new Error('start failed', { cause: down }), isUnreachable).outcome, 'unreachable');
    const other500 = failed(2, new Error('boom'), isUnreachable);
    assert.equal(other500.outcome, 'failed');
    assert.equal((JSON.parse(other500.text) as { error: { code: string } }).error.code, 'error');
  });

  test('the exit status is the most serious outcome: failed 1, unreachable 4, bad 2, refused 3, else 0', () => {
    const none = { admitted: 0, refused: 0, bad: 0, unreachable: 0, failed: 0 };
    assert.equal(fileExitCode({ ...none, admitted: 5 }), 0);
    assert.equal(fileExitCode(none), 0);
    assert.equal(fileExitCode({ ...none, admitted: 5, refused: 1 }), 3);
    assert.equal(fileExitCode({ ...none, refused: 1, bad: 1 }), 2);
    assert.equal(fileExitCode({ ...none, refused: 1, bad: 1, unreachable: 1 }), 4);
    assert.equal(fileExitCode({ ...none, refused: 1, bad: 1, unreachable: 1, failed: 1 }), 1);
  });

  test('the summary counts each outcome and names the first lines of each that was not admitted', () => {
    const tally = new FileTally();
    tally.add(1, 'admitted');
    tally.add(2, 'bad');
    for (let line = 3; line < 15; line++) tally.add(line, 'refused');
    assert.equal(tally.summary(), 'wakegate: 14 events: 1 admitted, 12 refused (lines 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, …), 1 bad (line 2); exit 2');
  });
});

describe('emit --file: admitting the lines', () => {
  /** A gate that answers after a delay per entity, fails for `boom`, and records how many calls were in flight at once. */
  function fakeGate(delays: Record<string, number>) {
    let inFlight = 0;
    const seen = { maxInFlight: 0, agents: [] as (string | undefined)[] };
    const gate = {
      admit: async (raw: unknown, opts: { agent?: string } = {}) => {
        const e = raw as { entity: string };
        seen.agents.push(opts.agent);
        inFlight++;
        seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, delays[e.entity] ?? 1));
        inFlight--;
        if (e.entity === 'boom') throw new Error('boom');
        return answer(e.entity);
      },
    };
    return { gate, seen };
  }
  async function* linesOf(texts: string[]) {
    for (const t of texts) yield t;
  }

  test('answers come out in the file’s order whatever order they finish in; a bad line is answered and the others go on', async () => {
    const { gate, seen } = fakeGate({ a: 60, b: 1, c: 30 });
    const lines = [
      JSON.stringify(event('a')),
      'not json',
      '',
      JSON.stringify({ ...event('b'), agent: 'canary' }),
      JSON.stringify(event('boom')),
      JSON.stringify(event('c')),
    ];
    let stdout = '';
    const tally = await admitLines(gate, linesOf(lines), 4, { stdout: (t) => void (stdout += t), stderr: () => undefined });
    const out = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; decision?: string; wakeKey?: string; error?: { code: string } });
    assert.deepEqual(
      out.map((o) => [o.line, o.wakeKey ?? o.error?.code]),
      [
        [1, 'a'],
        [2, 'invalid_event'],
        [4, 'b'],
        [5, 'error'],
        [6, 'c'],
      ],
    );
    assert.deepEqual(tally.counts, { admitted: 3, refused: 0, bad: 1, unreachable: 0, failed: 1 });
    assert.equal(tally.exitCode, 1);
    assert.deepEqual(seen.agents, [undefined, 'canary', undefined, undefined]);
  });

  test('never more than --concurrency events in flight', async () => {
    const { gate, seen } = fakeGate({});
    const lines = Array.from({ length: 50 }, (_, i) => JSON.stringify(event(`e${i}`)));
    const tally = await admitLines(gate, linesOf(lines), 5, { stdout: () => undefined, stderr: () => undefined });
    assert.equal(tally.counts.admitted, 50);
    assert.ok(seen.maxInFlight <= 5 && seen.maxInFlight > 1, String(seen.maxInFlight));
  });
});

describe('emit through a resident process', () => {
  test('only plain emits go to it: not --wait, --file, a payload on stdin, or help', () => {
    const base = ['emit', '--source', 'ping', '--entity', 'e', '--type', 't'];
    assert.equal(residentCanAnswer(base), true);
    assert.equal(residentCanAnswer([...base, '--payload', '{"a":1}']), true);
    for (const extra of [['--wait'], ['--file', 'x'], ['--file=x'], ['--payload', '-'], ['--payload=-'], ['--help'], ['-h']])
      assert.equal(residentCanAnswer([...base, ...extra]), false, extra.join(' '));
    assert.equal(residentCanAnswer(['runs']), false);
  });
});
