import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectBaseOf, replayEventKey } from '../../src/core/ids';
import type { AbsorbedEvent, RunInput } from '../../src/core/run-types';
import { keyEvent } from '../../src/gate/key-event';
import { whyNotReplayed } from '../../src/shadow/replay';
import { registryOf } from '../helpers/app';

const registry = registryOf();
const event = {
  source: 'campaigns',
  entity: 'spring-sale',
  type: 'report.due',
  occurredAt: '2026-12-06T10:05:00Z',
  payload: { dashboards: ['overview'] },
  version: 3,
};

test("a replayed event's key is the original's under its epoch, and its run is named by that key", () => {
  const original = keyEvent(registry, event, { agent: 'campaign-reporter' }).input;
  const replayed = keyEvent(registry, event, { agent: 'campaign-reporter', replay: { epoch: 'e1', of: 'campaign-reporter#spring-sale@x~y.1' } }).input;
  assert.equal(replayed.eventKey, `${original.eventKey}/replay/e1`);
  assert.equal(replayed.eventKey, replayEventKey(original.eventKey, 'e1'));
  assert.equal(replayed.fingerprint, original.fingerprint);
  assert.deepEqual(replayed.replay, { epoch: 'e1', of: 'campaign-reporter#spring-sale@x~y.1', eventKey: original.eventKey });
  assert.equal(replayed.version, undefined, 'a replay is never stale: it carries no entity version');
  assert.equal(original.version, 3);
  assert.notEqual(replayEventKey(original.eventKey, 'e2'), replayed.eventKey, 'another epoch, another key');
  assert.equal(replayEventKey('a/b', 'x/y'), 'a/b/replay/x%2Fy', 'an epoch cannot forge another key');
});

const input = (over: Partial<RunInput>): Pick<RunInput, 'runKey' | 'origin' | 'replay'> => ({ runKey: 'own', origin: { kind: 'event' }, ...over });
const absorbed = (key: string, of?: string): AbsorbedEvent => ({
  eventKey: key,
  source: 's',
  type: 't',
  entity: 'e',
  occurredAt: '2026-12-06T10:00:00Z',
  deliveryIds: [],
  payload: {},
  ...(of ? { replay: { epoch: 'e1', of, eventKey: key } } : {}),
});

test("a replay's effect keys are the recorded run's; any other run's are its own", () => {
  assert.equal(effectBaseOf(input({})), 'own');
  assert.equal(effectBaseOf(input({ replay: { epoch: 'e1', of: 'orig', eventKey: 'k' } })), 'orig');
  const batch = (events: AbsorbedEvent[], absorbedOverflow?: number) =>
    input({ origin: { kind: 'batch', coalescerId: 'c', absorbed: events, ...(absorbedOverflow ? { absorbedOverflow } : {}) } });
  assert.equal(effectBaseOf(batch([absorbed('a', 'orig'), absorbed('b', 'orig')])), 'orig', 'every event replays one run');
  assert.equal(effectBaseOf(batch([absorbed('a', 'orig'), absorbed('b')])), 'own', 'a live event joined: a decision of its own');
  assert.equal(effectBaseOf(batch([absorbed('a', 'orig'), absorbed('b', 'other')])), 'own', 'two runs replayed together');
  assert.equal(effectBaseOf(batch([absorbed('a', 'orig')], 2)), 'own', 'events past the bound are not known');
  assert.equal(effectBaseOf(input({ origin: { kind: 'shadow', of: 'orig', ofRunId: 'r', absorbed: [] } })), 'own');
});

test('a run whose events cannot be sent again is not replayed, with why', () => {
  const base = keyEvent(registry, event, { agent: 'campaign-reporter' }).input;
  assert.equal(whyNotReplayed({ ...base, origin: { kind: 'event' } }), undefined);
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'window', window: { scheduleId: 's', catchUp: 'all', lateAfterMs: 0 } } })!, /Schedule/);
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'batch', coalescerId: 'c', absorbed: [absorbed('a')], absorbedOverflow: 4 } })!, /4 events past/);
  const { payload: _p, ...bare } = absorbed('a');
  assert.match(whyNotReplayed({ ...base, origin: { kind: 'batch', coalescerId: 'c', absorbed: [bare] } })!, /without their payloads/);
});
