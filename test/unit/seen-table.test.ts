import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SeenEvent } from '../../core/coalesce-types';
import { SEEN_BUDGET_CHARS, SeenTable } from '../../workflows/coalesce/seen';

describe("the coalescer's dedup table", () => {
  test('bounded by age: prune drops entries past the horizon, oldest first; expiresAtMs is the newest entry plus the horizon', () => {
    const rows: SeenEvent[] = [];
    const t = new SeenTable(rows, 1000, () => assert.fail('no size bound reached'));
    t.add('e1', 'f'.repeat(64), 0, 'started');
    t.add('e2', 'a'.repeat(64), 500, 'coalesced', 'e1');
    assert.equal(rows[0]![1].length, 16, 'a fingerprint prefix is kept');
    assert.equal(t.expiresAtMs, 1500);
    t.prune(1000);
    assert.deepEqual(
      rows.map((r) => r[0]),
      ['e2'],
    );
    assert.equal(t.get('e1'), undefined);
    assert.ok(SeenTable.sameInputs(t.get('e2')!, 'a'.repeat(64)));
    assert.ok(!SeenTable.sameInputs(t.get('e2')!, 'b'.repeat(64)));
  });

  test('bounded by size: past the budget the oldest go early and the floor records when; the JSON stays under the budget', () => {
    const rows: SeenEvent[] = [];
    let floor = 0;
    const t = new SeenTable(rows, 86_400_000, (ms) => (floor = ms));
    const key = (i: number) => `webhooks/issue.updated/repo-${i % 50}/2026-12-04T10%3A00%3A00Z#${i}`;
    for (let i = 0; i < 40_000; i++) t.add(key(i), 'c'.repeat(64), i, 'coalesced', key(i - (i % 100)));
    assert.ok(t.size < 40_000, `some dropped (${t.size} kept)`);
    assert.ok(t.size > 5_000, `many kept (${t.size})`);
    assert.equal(floor, rows[0]![2] - 1, 'the floor is the newest dropped');
    assert.equal(t.get(key(0)), undefined);
    assert.ok(t.get(key(39_999)));
    assert.ok(JSON.stringify(rows).length <= SEEN_BUDGET_CHARS, `${JSON.stringify(rows).length} chars`);
  });

  test('rebuilt from its rows (continue-as-new), and a key decided again replaces its entry', () => {
    const rows: SeenEvent[] = [
      ['e1', 'f1', 1, 'started'],
      ['e2', 'f2', 2, 'skipped', 'e1'],
    ];
    const t = new SeenTable(rows, 1000, () => undefined);
    assert.deepEqual(t.get('e2'), ['e2', 'f2', 2, 'skipped', 'e1']);
    assert.ok(t.forget('e1'));
    assert.ok(!t.forget('e1'));
    t.add('e2', 'f3', 3, 'started');
    assert.deepEqual(rows, [['e2', 'f3', 3, 'started']]);
  });
});
