import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { SeenRow } from '../../src/core/coalesce-types';
import { KEYS_KEPT, keyHash, SEEN_BUDGET_CHARS, SEEN_CAPACITY, SeenTable } from '../../workflows/coalescer/seen';
import { packRows } from '../../workflows/coalescer/seen-pack';

/**
 * JSON characters of a table's rows and openers as the coalescer's continue-as-new input carries them,
 * packed (brackets and braces in place of the last commas).
 */
const tableChars = (h: { seen: SeenRow[]; seenOpeners?: Record<string, string> }) =>
  JSON.stringify(packRows(h.seen)).length + JSON.stringify(h.seenOpeners ?? {}).length - 2;
const holder = (seen: SeenRow[] = [], seenOpeners?: Record<string, string>, chain?: string) => ({
  seen,
  ...(seenOpeners ? { seenOpeners } : {}),
  ...(chain ? { chain } : {}),
});

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
    const h = holder([], undefined, '0a1b2c3d');
    const t = new SeenTable(h, 86_400_000, () => assert.fail(`dropped early at ${t.size}`));
    // Keys of 100 characters; ten events a run (a hot wake key's stream), then a run per event.
    const key = (i: number) => `webhooks/issue.updated/acme%2Fa-long-repository-name-${`${i}`.padStart(5, '0')}-${'x'.repeat(20)}/2026-12-04T10:00:00Z`;
    const per = (i: number) => (i < SEEN_CAPACITY / 2 ? 10 : 1);
    const token = (i: number) => `${key(i - (i % per(i)))}~0a1b2c3d.${Math.floor(i / per(i)).toString(36)}`;
    assert.equal(key(0).length, 100);
    const decision = (i: number) => (i % per(i) ? 'coalesced' : 'started');
    for (let i = 0; i < SEEN_CAPACITY; i++) t.add(key(i), `${i}`.padStart(64, 'c'), 1_000_000 + i, decision(i), token(i), `offer-${i}`);
    assert.equal(t.size, SEEN_CAPACITY);
    assert.ok(SEEN_CAPACITY >= 8_000, `${SEEN_CAPACITY}`);
    assert.ok(tableChars(h) <= SEEN_BUDGET_CHARS, `${tableChars(h)} chars`);
    for (const i of [0, 1, 9, 10, 4321, 6501, 7000, SEEN_CAPACITY - KEYS_KEPT - 1, SEEN_CAPACITY - 1]) {
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
    assert.deepEqual(t.keysOfRun(token(7000)), [keyHash(key(7000))]);
  });

  test('a hot wake key: a 10,000-event stream (50-character keys, a run per 830 events) is held whole under 512 KiB, every event answered as recorded', () => {
    const h = holder([], undefined, '0a1b2c3d');
    const t = new SeenTable(h, 3_600_000, () => assert.fail(`dropped early at ${t.size}`));
    const key = (i: number) => `ping/e-${i}/hot-1a2b3c4d/2026-12-02T10%3A00%3A00.000Z`;
    const token = (i: number) => `${key(i - (i % 830))}~0a1b2c3d.${Math.floor(i / 830).toString(36)}`;
    const fp = (i: number) => i.toString(16).padEnd(64, '9');
    const offer = (i: number) => `${i.toString(16).padStart(8, 'a')}-1b2c-4d5e-8f90-a1b2c3d4e5f6`;
    for (let i = 0; i < 10_000; i++) t.add(key(i), fp(i), 1_796_000_000_000 + i * 6, i % 830 ? 'coalesced' : 'started', token(i), offer(i));
    assert.equal(t.size, 10_000);
    assert.ok(tableChars(h) <= SEEN_BUDGET_CHARS && SEEN_BUDGET_CHARS < 512 * 1024, `${tableChars(h)} chars`);
    for (let i = 0; i < 10_000; i += 7) {
      const e = t.get(key(i))!;
      assert.deepEqual([e.decision, e.runToken, e.atMs], [i % 830 ? 'coalesced' : 'started', token(i), 1_796_000_000_000 + i * 6], `event ${i}`);
      assert.ok(SeenTable.sameInputs(e, fp(i)) && !SeenTable.sameInputs(e, fp(i + 1)), `event ${i}: its inputs`);
      assert.ok(SeenTable.firstOffer(e, offer(i)) && !SeenTable.firstOffer(e, offer(i + 1)), `event ${i}: its first offer`);
    }
  });

  test('bounded by size: past the budget the oldest go early, the floor and the count of them are reported; the JSON stays under the budget', () => {
    const h = holder();
    let floor = 0;
    let dropped = 0;
    const t = new SeenTable(h, 86_400_000, (ms, n) => ((floor = ms), (dropped += n)));
    const key = (i: number) => `webhooks/issue.updated/repo-${i % 50}/2026-12-04T10%3A00%3A00Z#${i}`;
    for (let i = 0; i < 40_000; i++) t.add(key(i), 'c'.repeat(64), i, 'coalesced', `${key(i - (i % 100))}~c.${Math.floor(i / 100)}`);
    assert.ok(t.size < 40_000 && t.size > 8_000, `${t.size} kept`);
    assert.equal(dropped, 40_000 - t.size);
    assert.equal(floor, 40_000 - t.size - 1, 'the floor is the newest dropped');
    assert.equal(t.get(key(0)), undefined);
    assert.ok(t.get(key(39_999)));
    assert.ok(tableChars(h) <= SEEN_BUDGET_CHARS, `${tableChars(h)} chars`);
  });

  test('rebuilt from its rows (continue-as-new: plain JSON), compact ones too; a key decided again replaces its entry; forget takes either form', () => {
    const h = holder();
    const t = new SeenTable(h, 86_400_000, () => undefined);
    for (let i = 0; i < KEYS_KEPT + 20; i++) t.add(`k/${i}/x/y`, 'f', i, 'coalesced', `k/0/x/y~c.1`);
    const copy = JSON.parse(JSON.stringify({ ...h, ...t.packed() })) as typeof h;
    assert.equal(copy.seen.length, KEYS_KEPT + 1, 'the compact ones packed in one string');
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

/*
 * The table against a model of what it was told, with small bounds (a budget of BUDGET characters,
 * KEPT entries in full) so that generated command lists reach compaction and the size bound in a
 * few hundred events; the JSON round trip of a continue-as-new is a command. After every command:
 * the table's JSON is within its budget; every event it still holds is answered as it was recorded
 * (decision, run, when, the same inputs, the first offer; other inputs and other offers are told
 * apart); and the events it no longer holds are exactly the ones the rule lets go: forgotten or
 * re-armed by hand, past the horizon, or, past the budget, the oldest first, each reported (count,
 * and a floor at or after its decision).
 */
describe("the coalescer's dedup table against a model (model-based)", () => {
  const BUDGET = 6_000;
  const KEPT = 8;
  const HORIZON_MS = 600_000;
  const CHAIN = '0a1b2c3d';
  const decisions = ['started', 'coalesced', 'skipped', 'steered', 'stale', 'mismatch'] as const;
  type Recorded = { fp: string; atMs: number; decision: (typeof decisions)[number]; runToken?: string; offer?: string };
  const keyOf = (i: number, len: number) => `webhooks/t-${i}/${'e'.repeat(len)}/2026-12-04T10%3A00%3A00Z`;
  const hex = (n: number, chars: number) => (n.toString(16).repeat(chars) + 'f'.repeat(chars)).slice(0, chars);
  const add = fc.record({
    k: fc.constant('add' as const),
    key: fc.nat({ max: 300 }),
    len: fc.nat({ max: 60 }),
    fp: fc.nat({ max: 3 }),
    hexFp: fc.boolean(),
    decision: fc.constantFrom(...decisions),
    // The run that took it: none, the one it opened, or one another event opened; of this chain or another.
    run: fc.constantFrom('none', 'own', 'other'),
    opener: fc.nat({ max: 300 }),
    n: fc.nat({ max: 2000 }),
    otherChain: fc.boolean(),
    offer: fc.option(fc.nat({ max: 2 ** 31 }), { nil: undefined }),
    uuid: fc.boolean(),
    ms: fc.nat({ max: 500 }),
  });
  const cmd = fc.oneof(
    { weight: 12, arbitrary: add },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('forget' as const), key: fc.nat({ max: 300 }) }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('retake' as const), key: fc.nat({ max: 300 }), n: fc.nat({ max: 2000 }) }) },
    { weight: 1, arbitrary: fc.record({ k: fc.constant('prune' as const), ms: fc.nat({ max: 200_000 }) }) },
    { weight: 1, arbitrary: fc.constant({ k: 'continueAsNew' as const }) },
  );

  test('holds its budget, answers what it holds as recorded, and lets go only by its rule', () => {
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 300, size: 'max' }), (cmds) => {
        let h: { seen: SeenRow[]; seenOpeners?: Record<string, string>; chain: string } = { seen: [], chain: CHAIN };
        let floorMs = 0;
        let dropped = 0;
        const onFloor = (ms: number, n: number) => ((floorMs = Math.max(floorMs, ms)), (dropped += n));
        const limits = { budgetChars: BUDGET, keysKept: KEPT };
        let t = new SeenTable(h, HORIZON_MS, onFloor, limits);
        /** What the table was told, oldest first (a key decided again goes last). */
        const model = new Map<string, Recorded>();
        const lens = new Map<number, number>();
        // A run (chain.n) has one opening event, whoever names it first.
        const openers = new Map<string, string>();
        const tokenOf = (ref: string, opener: string) => `${openers.get(ref) ?? openers.set(ref, opener).get(ref)!}~${ref}`;
        let now = 1_796_000_000_000;
        for (const c of cmds) {
          if (c.k === 'add') {
            now += c.ms;
            const key = keyOf(c.key, (lens.get(c.key) ?? lens.set(c.key, c.len).get(c.key))!);
            const chain = c.otherChain ? 'ffeeddcc' : CHAIN;
            const runToken =
              c.run === 'none' ? undefined : tokenOf(`${chain}.${c.n.toString(36)}`, c.run === 'own' ? key : keyOf(c.opener, lens.get(c.opener) ?? 0));
            const fp = c.hexFp ? hex(c.fp + 1, 64) : `fp-${c.fp}`;
            const offer = c.offer === undefined ? undefined : c.uuid ? `${hex(c.offer, 8)}-1b2c-4d5e-8f90-a1b2c3d4e5f6` : `offer-${c.offer}`;
            t.add(key, fp, now, c.decision, runToken, offer);
            model.delete(key);
            model.set(key, { fp, atMs: now, decision: c.decision, ...(runToken ? { runToken } : {}), ...(offer ? { offer } : {}) });
          } else if (c.k === 'forget') {
            const key = keyOf(c.key, lens.get(c.key) ?? 0);
            assert.equal(t.forget(key), model.delete(key), `forget ${key}`);
          } else if (c.k === 'retake') {
            const key = keyOf(c.key, lens.get(c.key) ?? 0);
            const token = tokenOf(`${CHAIN}.${c.n.toString(36)}`, keyOf(c.key + 1, 3));
            t.retake(key, token);
            const was = model.get(key);
            if (was) was.runToken = token;
          } else if (c.k === 'prune') {
            now += c.ms;
            t.prune(now);
            for (const [key, r] of model) if (r.atMs <= now - HORIZON_MS) model.delete(key);
          } else {
            // As the continue-as-new input carries it: packed.
            h = JSON.parse(JSON.stringify({ ...h, ...t.packed() })) as typeof h;
            t = new SeenTable(h, HORIZON_MS, onFloor, limits);
          }
          assert.ok(tableChars(h) <= BUDGET, `${tableChars(h)} chars over ${BUDGET}`);
          // Held or not, oldest first: the ones let go by the size bound are a prefix of what the model holds.
          let letGo = 0;
          for (const [key, r] of model) {
            const e = t.get(key);
            if (!e) {
              assert.equal(letGo, [...model.keys()].indexOf(key), `${key} let go while an older one is held`);
              assert.ok(r.atMs <= floorMs, `${key} let go after the floor`);
              letGo += 1;
              continue;
            }
            assert.equal(e.decision, r.decision, key);
            assert.equal(e.atMs, r.atMs, key);
            assert.equal(e.runToken, r.runToken, key);
            assert.ok(SeenTable.sameInputs(e, r.fp), `${key}: its own inputs`);
            assert.ok(!SeenTable.sameInputs(e, r.fp.startsWith('fp-') ? `fp-${r.fp}` : hex(9, 64)), `${key}: other inputs`);
            if (r.offer) assert.ok(SeenTable.firstOffer(e, r.offer), `${key}: its first offer`);
            assert.ok(!SeenTable.firstOffer(e, 'fedcba98-0000-4000-8000-000000000000'), `${key}: another offer`);
          }
          for (const key of [...model.keys()].slice(0, letGo)) model.delete(key);
          dropped -= letGo;
          assert.equal(dropped, 0, 'every event let go is counted, once');
        }
      }),
      { numRuns: Number(process.env.SEEN_MODEL_RUNS ?? 60), includeErrorInReport: true },
    );
  });
});
