import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SeenRow } from '../../src/core/coalesce-types';
import { KEYS_KEPT, keyHash, SEEN_BUDGET_CHARS, SEEN_CAPACITY, SeenTable } from '../../workflows/coalescer/seen';

const holder = (seen: SeenRow[] = [], seenOpeners?: Record<string, string>) => ({ seen, ...(seenOpeners ? { seenOpeners } : {}) });

describe("the coalescer's dedup table", () => {
  test('bounded by age: prune drops entries past the horizon, oldest first; expiresAtMs is the newest entry plus the horizon', () => {
    const h = holder();
    const t = new SeenTable(h, 1000, () => assert.fail('no size bound reached'));
    t.add('e1', 'f'.repeat(64), 0, 'started', 'e1~c.1');
    t.add('e2', 'a'.repeat(64), 500, 'coalesced', 'e1~c.1');
    assert.equal(t.get('e1')!.fingerprint.length, 16, 'a fingerprint prefix is kept');
    assert.equal(t.get('e1')!.runToken, 'e1~c.1');
    assert.equal(t.expiresAtMs, 1500);
    t.prune(1000);
    assert.equal(t.size, 1);
    assert.equal(t.get('e1'), undefined);
    assert.ok(SeenTable.sameInputs(t.get('e2')!, 'a'.repeat(64)));
    assert.ok(!SeenTable.sameInputs(t.get('e2')!, 'b'.repeat(64)));
  });

  test(`holds its stated capacity (${SEEN_CAPACITY} events) within the budget for 100-character keys, and every one still deduplicates`, () => {
    const h = holder();
    const t = new SeenTable(h, 86_400_000, () => assert.fail(`dropped early at ${t.size}`));
    // Keys of 100 characters; ten events a run (a hot wake key's stream), then a run per event.
    const key = (i: number) => `webhooks/issue.updated/acme%2Fa-long-repository-name-${`${i}`.padStart(5, '0')}-${'x'.repeat(20)}/2026-12-04T10:00:00Z`;
    const per = (i: number) => (i < SEEN_CAPACITY / 2 ? 10 : 1);
    const token = (i: number) => `${key(i - (i % per(i)))}~0a1b2c3d.${Math.floor(i / per(i)).toString(36)}`;
    assert.equal(key(0).length, 100);
    const decision = (i: number) => (i % per(i) ? 'coalesced' : 'started');
    for (let i = 0; i < SEEN_CAPACITY; i++) t.add(key(i), `${i}`.padStart(64, 'c'), 1_000_000 + i, decision(i), token(i), `offer-${i}`);
    assert.equal(t.size, SEEN_CAPACITY);
    assert.ok(SEEN_CAPACITY >= 12_000, `${SEEN_CAPACITY}`);
    assert.ok(JSON.stringify(h).length <= SEEN_BUDGET_CHARS, `${JSON.stringify(h).length} chars`);
    for (const i of [0, 1, 9, 10, 4321, 6501, 9000, SEEN_CAPACITY - KEYS_KEPT - 1, SEEN_CAPACITY - 1]) {
      const e = t.get(key(i))!;
      assert.ok(e, `event ${i} is held`);
      assert.equal(e.decision, decision(i));
      assert.equal(e.runToken, token(i), `event ${i} names its run`);
      assert.equal(e.atMs, 1_000_000 + i);
      assert.ok(SeenTable.firstOffer(e, `offer-${i}`));
      assert.ok(SeenTable.sameInputs(e, `${i}`.padStart(64, 'c')));
    }
    assert.equal(typeof h.seen[0], 'string', 'the oldest are compact');
    assert.ok(Array.isArray(h.seen.at(-1)), 'the newest keep their key');
    assert.equal(t.keysOfRun(token(20)).length, 10);
    assert.deepEqual(t.keysOfRun(token(9000)), [keyHash(key(9000))]);
  });

  test('bounded by size: past the budget the oldest go early, the floor and the count of them are reported; the JSON stays under the budget', () => {
    const h = holder();
    let floor = 0;
    let dropped = 0;
    const t = new SeenTable(h, 86_400_000, (ms, n) => ((floor = ms), (dropped += n)));
    const key = (i: number) => `webhooks/issue.updated/repo-${i % 50}/2026-12-04T10%3A00%3A00Z#${i}`;
    for (let i = 0; i < 40_000; i++) t.add(key(i), 'c'.repeat(64), i, 'coalesced', `${key(i - (i % 100))}~c.${Math.floor(i / 100)}`);
    assert.ok(t.size < 40_000 && t.size > 10_000, `${t.size} kept`);
    assert.equal(dropped, 40_000 - t.size);
    assert.equal(floor, 40_000 - t.size - 1, 'the floor is the newest dropped');
    assert.equal(t.get(key(0)), undefined);
    assert.ok(t.get(key(39_999)));
    assert.ok(JSON.stringify(h).length <= SEEN_BUDGET_CHARS, `${JSON.stringify(h).length} chars`);
  });

  test('rebuilt from its rows (continue-as-new: plain JSON), compact ones too; a key decided again replaces its entry; forget takes either form', () => {
    const h = holder();
    const t = new SeenTable(h, 86_400_000, () => undefined);
    for (let i = 0; i < KEYS_KEPT + 20; i++) t.add(`k/${i}/x/y`, 'f', i, 'coalesced', `k/0/x/y~c.1`);
    const copy = JSON.parse(JSON.stringify(h)) as typeof h;
    const again = new SeenTable(copy, 86_400_000, () => undefined);
    assert.equal(again.size, KEYS_KEPT + 20);
    assert.equal(again.get('k/3/x/y')!.runToken, 'k/0/x/y~c.1');
    assert.equal(again.get('k/3/x/y')!.key, keyHash('k/3/x/y'));
    assert.ok(again.forget('k/3/x/y'));
    assert.ok(!again.forget('k/3/x/y'));
    again.add('k/600/x/y', 'f2', 700, 'started');
    assert.equal(again.get('k/600/x/y')!.decision, 'started');
    // Every compact entry forgotten: the opener's entry in the openers' table goes with the last.
    for (let i = 0; i < 40; i++) again.forget(`k/${i}/x/y`);
    assert.deepEqual(copy.seenOpeners, {});
  });

  test('retake: an event moved to another run names it, compact or not', () => {
    const h = holder();
    const t = new SeenTable(h, 86_400_000, () => undefined);
    for (let i = 0; i < KEYS_KEPT + 5; i++) t.add(`k/${i}/x/y`, 'f', i, 'coalesced', 'k/0/x/y~c.1');
    t.retake('k/1/x/y', 'k/9/x/y~c.2');
    t.retake(`k/${KEYS_KEPT + 4}/x/y`, 'k/9/x/y~c.2');
    assert.equal(t.get('k/1/x/y')!.runToken, 'k/9/x/y~c.2');
    assert.equal(t.get(`k/${KEYS_KEPT + 4}/x/y`)!.runToken, 'k/9/x/y~c.2');
    assert.equal(t.get('k/2/x/y')!.runToken, 'k/0/x/y~c.1');
  });
});
