import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectKey } from '../../src/core/ids';
import { afterRefused, nextSlots, runEffectKey, slotOfKey, slotsAcross } from '../../src/core/effect-slots';
import type { AbsorbedEvent, RunResult } from '../../src/core/run-types';
import { keyEvent } from '../../src/gate/key-event';
import { replayInput } from '../../src/gate/replay';
import { eventsOf, replayChoice, whyNotReplayed } from '../../src/shadow/replay';
import type { RecordedEvent } from '../../src/trail/history';
import { registryOf } from '../helpers/app';

const registry = registryOf();
const event = (entity: string, dashboards: string[]) => ({
  source: 'campaigns',
  entity,
  type: 'report.due',
  occurredAt: '2026-12-06T10:05:00Z',
  payload: { dashboards },
  version: 3,
  deliveryId: 'd-1',
});
const key = (e: ReturnType<typeof event>) => keyEvent(registry, e, { agent: 'campaign-reporter' });

test("a replay's input: the recorded run's own event as keyed today, under the recorded run's own key, never stale, with a batch's events", () => {
  const of = 'campaign-reporter#spring@k~c.1';
  const one = replayInput({ of, after: 'run-1', namedEpoch: 'e1', agent: 'campaign-reporter', effects: [], keyed: [key(event('spring', ['a']))] });
  const original = key(event('spring', ['a'])).input;
  assert.equal(one.runKey, of, 'every execution of a logical run has its workflow ID: Temporal keeps one open');
  assert.equal(one.eventKey, original.eventKey, 'the same event: its key, wake key and fingerprint');
  assert.equal(one.wakeKey, original.wakeKey);
  assert.equal(one.fingerprint, original.fingerprint);
  assert.equal(one.version, undefined, 'a replay carries no entity version: it is never stale');
  assert.equal(one.deliveryId, undefined);
  assert.deepEqual(one.origin, { kind: 'event' });
  assert.deepEqual(one.replay, { epoch: 'e1', of, by: 'replay', effects: [] });
  const unnamed = replayInput({ of, after: 'run-1', agent: 'campaign-reporter', effects: [], keyed: [key(event('spring', ['a']))] });
  assert.equal(unnamed.replay?.epoch, 'after:run-1', 'no epoch named: it follows the latest execution, once');
  const batch = replayInput({ of, after: 'run-1', agent: 'campaign-reporter', effects: [], keyed: [key(event('spring', ['a'])), key(event('spring', ['b']))] });
  assert.deepEqual(
    batch.replay?.events?.map((e) => e.payload),
    [{ dashboards: ['a'] }, { dashboards: ['b'] }],
  );
});

test('every execution of a run keys an effect by its slot: the key it carries, or runKey#effect@n<nth>, never the step', () => {
  const input = {
    runKey: 'r',
    replay: {
      epoch: 'e1',
      of: 'r',
      effects: [
        { effect: 'start_export', effectKey: 'r#start_export@0' },
        { effect: 'post', effectKey: 'r#post@1' },
        { effect: 'post', effectKey: 'r#post@2' },
      ],
    },
  };
  const staged = [{ effect: 'post' }, { effect: 'start_export' }, { effect: 'post' }, { effect: 'post' }, { effect: 'notify' }];
  assert.deepEqual(
    staged.map((_, i) => runEffectKey(input, staged, i)),
    ['r#post@1', 'r#start_export@0', 'r#post@2', 'r#post@n2', 'r#notify@n0'],
  );
  // Never begun, an effect keeps its key in every execution whatever its step.
  assert.equal(runEffectKey(input, [{ effect: 'notify' }], 0), runEffectKey(input, [{ effect: 'post' }, { effect: 'notify' }], 1));
  assert.equal(runEffectKey({ runKey: 'x' }, staged, 1), effectKey('x', 'start_export', 'n0'), 'a first execution: runKey#effect@n<nth>, never the step');
  assert.equal(runEffectKey({ runKey: 'x' }, staged, 2), 'x#post@n1');
});

test("the next execution's slots: what the latest carried, replaced by what it began; a refused key's slot takes the next key", () => {
  const b = (effect: string, effectKey: string, rejected = false) => ({ effect, effectKey, rejected });
  // A first execution began the export and had its post refused outright.
  const first = nextSlots(undefined, [b('start_export', 'r#start_export@n0'), b('post', 'r#post@n0', true)]);
  assert.deepEqual(first, [
    { effect: 'start_export', effectKey: 'r#start_export@n0', pinned: true },
    { effect: 'post', effectKey: 'r#post@n0.r1' },
  ]);
  // The next landed the post under that key, began a notify, and never reached the export: all three carried on.
  const second = nextSlots(first, [b('post', 'r#post@n0.r1'), b('notify', 'r#notify@n0')]);
  assert.deepEqual(second, [
    { effect: 'start_export', effectKey: 'r#start_export@n0', pinned: true },
    { effect: 'post', effectKey: 'r#post@n0.r1', pinned: true },
    { effect: 'notify', effectKey: 'r#notify@n0', pinned: true },
  ]);
  assert.equal(afterRefused('r#post@n0.r1'), 'r#post@n0.r2');
  assert.deepEqual(nextSlots(second, []), second, 'an execution that began nothing carries every slot on');
  // A key something may have landed under never moves: a provider that refuses it later (a changed
  // body under the same idempotency key, a request still in flight) must not make the post land twice.
  assert.deepEqual(nextSlots(second, [b('post', 'r#post@n0.r1', true)])[1], { effect: 'post', effectKey: 'r#post@n0.r1', pinned: true });
});

test("every execution's keys count: a key an earlier execution may have landed pins its slot, whatever the latest carried", () => {
  const b = (effect: string, effectKey: string, rejected = false) => ({ effect, effectKey, rejected });
  assert.deepEqual(slotOfKey('r#post@n1.r2', 'post'), { effect: 'post', nth: 1 });
  assert.equal(slotOfKey('r#post@n1', 'notify'), undefined, 'a key of another effect');
  // A run landed its post under n0, was reset from the Web UI (its input knew nothing of the post),
  // and the provider refused n0 in the reset execution (another body under a key it holds).
  const latestOnly = nextSlots(undefined, [b('post', 'r#post@n0', true)]);
  assert.deepEqual(latestOnly, [{ effect: 'post', effectKey: 'r#post@n0.r1' }], 'alone, the latest would move the slot');
  assert.deepEqual(slotsAcross(undefined, [b('post', 'r#post@n0', true)], [[b('post', 'r#post@n0')]]), [
    { effect: 'post', effectKey: 'r#post@n0', pinned: true },
  ]);
  // An earlier execution that reached a slot the latest never did: the slots before it keep their keys.
  assert.deepEqual(slotsAcross(undefined, [], [[b('post', 'r#post@n1')]]), [
    { effect: 'post', effectKey: 'r#post@n0' },
    { effect: 'post', effectKey: 'r#post@n1', pinned: true },
  ]);
  // A key refused outright everywhere pins nothing; a slot the latest pinned keeps its key.
  assert.deepEqual(slotsAcross(undefined, [b('post', 'r#post@n0.r1')], [[b('post', 'r#post@n0', true)]]), [
    { effect: 'post', effectKey: 'r#post@n0.r1', pinned: true },
  ]);
});

test('which runs a replay takes: failed by default; a stopped run only when asked; a superseded one never; a success only under an epoch', () => {
  const result = (r: Partial<RunResult>) => ({ terminalReason: 'cancelled', ...r }) as RunResult;
  const take = { take: true };
  assert.deepEqual(replayChoice({ status: 'FAILED' }, {}), take);
  assert.deepEqual(replayChoice({ status: 'TIMED_OUT' }, {}), take);
  assert.deepEqual(replayChoice({ status: 'COMPLETED', result: result({ terminalReason: 'escalated' }) }, {}), { take: false });
  assert.deepEqual(replayChoice({ status: 'COMPLETED', result: result({ terminalReason: 'escalated' }) }, { reason: 'escalated' }), take);
  const killed = { status: 'COMPLETED', result: result({ killedBy: { who: 'ana', reason: 'loop' } }) };
  assert.match((replayChoice(killed, {}) as { why: string }).why, /killed by ana.*--include-cancelled/, 'listed, so the operator knows');
  assert.match((replayChoice(killed, { reason: 'cancelled' }) as { why: string }).why, /killed by ana.*--include-cancelled/);
  assert.deepEqual(replayChoice(killed, { reason: 'escalated' }), { take: false }, 'another reason asked: not listed');
  assert.deepEqual(replayChoice(killed, { includeCancelled: true }), take);
  assert.deepEqual(replayChoice({ status: 'TERMINATED' }, { includeCancelled: true }), take, 'terminated from the Web UI: a person stopped it');
  const superseded = { status: 'COMPLETED', result: result({ supersededBy: 'r2' }) };
  assert.match((replayChoice(superseded, { includeCancelled: true }) as { why: string }).why, /superseded by r2/);
  const succeeded = { status: 'COMPLETED', result: result({ terminalReason: 'success' }) };
  assert.match((replayChoice(succeeded, { reason: 'success' }) as { why: string }).why, /--epoch/);
  assert.deepEqual(replayChoice(succeeded, { reason: 'success', epoch: 'e9' }), take);
  const replayed = { ...succeeded, replayEpoch: 'e1' };
  assert.match((replayChoice(replayed, {}) as { why: string }).why, /already replayed.*e1.*success/, 'listed, so the same command again says why');
  assert.match((replayChoice(replayed, { reason: 'success', epoch: 'e1' }) as { why: string }).why, /already replayed/, 'the same epoch again');
  assert.deepEqual(replayChoice(replayed, { reason: 'success', epoch: 'e2' }), take);
});

test("a replay's events: the run's own, its batch's, and those skipped on it, once each", () => {
  const base = key(event('spring', ['a'])).input;
  const skipped: RecordedEvent = { kind: 'signal', at: '', name: 'skipped', input: { events: [absorbed('s1', { n: 1 }), absorbed(base.eventKey, {})] } };
  const batch = { ...base, origin: { kind: 'batch' as const, coalescerId: 'c', absorbed: [absorbed(base.eventKey, {}), absorbed('b1', { n: 2 })] } };
  assert.deepEqual(
    eventsOf(batch, [skipped]).map((e) => e.payload),
    [{ dashboards: ['a'] }, { n: 2 }, { n: 1 }],
  );
  assert.match(whyNotReplayed(batch, undefined, [{ ...skipped, input: { events: [absorbed('s2')] } }])!, /skipped on it were recorded without/);
});

const absorbed = (k: string, payload?: Record<string, unknown>): AbsorbedEvent => ({
  eventKey: k,
  source: 's',
  type: 't',
  entity: 'e',
  occurredAt: '2026-12-06T10:00:00Z',
  deliveryIds: [],
  ...(payload ? { payload } : {}),
});

test('a run whose events cannot be sent again as they were is not replayed, with why', () => {
  const base = key(event('spring', ['a'])).input;
  const ok = { terminalReason: 'failed' } as RunResult;
  assert.equal(whyNotReplayed({ ...base, origin: { kind: 'event' } }, undefined), undefined);
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'window', window: { scheduleId: 's', catchUp: 'all', lateAfterMs: 0 } } }, ok)!, /Schedule/);
  assert.match(
    whyNotReplayed({ ...base, origin: { kind: 'batch', coalescerId: 'c', absorbed: [absorbed('a', {})], absorbedOverflow: 4 } }, ok)!,
    /4 events past/,
  );
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'batch', coalescerId: 'c', absorbed: [absorbed('a')] } }, ok)!, /without their payloads/);
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'event' } }, { ...ok, steered: ['k'] })!, /steered/);
  const steerUpdate: RecordedEvent = { kind: 'update', at: '', id: 'steer:k', name: 'steer' };
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'event' } }, undefined, [steerUpdate])!, /steered/, 'a failed run: its history says');
});
