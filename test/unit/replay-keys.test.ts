import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectKey, replayRunKey, runEffectKey } from '../../src/core/ids';
import type { AbsorbedEvent, RunResult } from '../../src/core/run-types';
import { keyEvent } from '../../src/gate/key-event';
import { replayInput } from '../../src/gate/replay';
import { effectSlots, effectsBegun, whyNotReplayed } from '../../src/shadow/replay';
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

test("a replay's input: the recorded run's own event as keyed today, under <run>/replay, never stale, with a batch's events", () => {
  const of = 'campaign-reporter#spring@k~c.1';
  const one = replayInput({ of, epoch: 'e1', agent: 'campaign-reporter', effects: [], keyed: [key(event('spring', ['a']))] });
  const original = key(event('spring', ['a'])).input;
  assert.equal(one.runKey, `${of}/replay`);
  assert.equal(one.runKey, replayRunKey(of));
  assert.equal(one.eventKey, original.eventKey, 'the same event: its key, wake key and fingerprint');
  assert.equal(one.wakeKey, original.wakeKey);
  assert.equal(one.fingerprint, original.fingerprint);
  assert.equal(one.version, undefined, 'a replay carries no entity version: it is never stale');
  assert.equal(one.deliveryId, undefined);
  assert.deepEqual(one.origin, { kind: 'event' });
  assert.deepEqual(one.replay, { epoch: 'e1', of, effects: [] });
  const batch = replayInput({ of, epoch: 'e1', agent: 'campaign-reporter', effects: [], keyed: [key(event('spring', ['a'])), key(event('spring', ['b']))] });
  assert.deepEqual(
    batch.replay?.events?.map((e) => e.payload),
    [{ dashboards: ['a'] }, { dashboards: ['b'] }],
  );
});

test('a replayed effect takes the key the recorded run gave the same effect, whatever its step; one it never began, a key of its own', () => {
  const input = {
    runKey: 'r/replay',
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
    ['r#post@1', 'r#start_export@0', 'r#post@2', 'r/replay#post@n2', 'r/replay#notify@n0'],
  );
  // Never begun by the recorded run, an effect keeps its key in every epoch whatever its step.
  assert.equal(runEffectKey(input, [{ effect: 'notify' }], 0), runEffectKey(input, [{ effect: 'post' }, { effect: 'notify' }], 1));
  assert.equal(runEffectKey({ runKey: 'x' }, staged, 1), effectKey('x', 'start_export', 1), 'any other run: runKey#effect@step');
});

test('the effects a run began are read from its commitEffect activities, in order, each once, with whether the provider refused each', () => {
  const commit = (effectKey: string, name: string): RecordedEvent => ({
    kind: 'activity',
    id: effectKey,
    at: '',
    activityType: 'commitEffect',
    input: { effectKey, effect: { name } },
  });
  assert.deepEqual(
    effectsBegun([
      { kind: 'activity', id: '1', at: '', activityType: 'prepareRun' },
      commit('r#start_export@0', 'start_export'),
      { kind: 'activity-failed', scheduledId: 'r#start_export@0', at: '', message: 'timed out' },
      commit('r#post@1', 'post'),
      { kind: 'activity-failed', scheduledId: 'r#post@1', at: '', message: '403', type: 'ProviderRejected' },
    ]),
    [
      { effect: 'start_export', effectKey: 'r#start_export@0', rejected: false },
      { effect: 'post', effectKey: 'r#post@1', rejected: true },
    ],
  );
});

test("each effect slot takes the last key any run began for it; one the provider refused outright, this epoch's own", () => {
  const b = (effect: string, effectKey: string, rejected = false) => ({ effect, effectKey, rejected });
  const recorded = [b('start_export', 'r#start_export@0'), b('post', 'r#post@1', true)];
  assert.deepEqual(effectSlots([recorded], 'r/replay', 'e1'), [
    { effect: 'start_export', effectKey: 'r#start_export@0' },
    { effect: 'post', effectKey: 'r/replay/e1#post@n0' },
  ]);
  // Epoch e1's replay landed the post under its own key and began a notify: e2 finds both.
  const e1 = [b('post', 'r/replay/e1#post@n0'), b('start_export', 'r#start_export@0'), b('notify', 'r/replay#notify@n0')];
  assert.deepEqual(effectSlots([recorded, e1], 'r/replay', 'e2'), [
    { effect: 'start_export', effectKey: 'r#start_export@0' },
    { effect: 'post', effectKey: 'r/replay/e1#post@n0' },
    { effect: 'notify', effectKey: 'r/replay#notify@n0' },
  ]);
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
