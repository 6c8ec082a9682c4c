import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { keyEvent } from '../../src/gate/gate';
import { bucketStartMs, effectKey, eventKey, parseEventKey } from '../../src/gate/keys';
import { canonicalJson, fingerprint } from '../../src/gate/fingerprint';
import { GateInputError } from '../../src/gate/errors';
import { checkOccurredAt, checkPayloadLimits, EVENT_LIMITS, nestsDeeperThan } from '../../src/gate/limits';
import { defineTrigger } from '../../src/trigger/definition';
import { TriggerRegistry } from '../../src/gate/trigger-registry';
import { canary } from '../../src/agents/canary';
import { registryOf } from '../helpers/app';

const campaign = defineTrigger({
  source: 'campaigns',
  description: 'campaign config changed',
  eventTypes: ['config.changed'],
  bucket: '1h',
  keyRationale: 'ten edits to one campaign within the hour are one change to report on',
  fingerprint: ['revision'],
  payload: z.object({ revision: z.number(), editor: z.string().optional() }),
});
/** An agent woken by the given sources (the canary's code under another name): keys do not depend on it. */
const probe = (...sources: string[]) => ({ probe: { ...canary, policy: { ...canary.policy, name: 'probe', triggers: sources } } });
const registry = new TriggerRegistry([campaign], probe('campaigns'));
const ev = (over: Record<string, unknown> = {}) => ({
  source: 'campaigns',
  entity: 'campaign-42',
  type: 'config.changed',
  occurredAt: '2026-12-02T14:05:00Z',
  payload: { revision: 7 },
  ...over,
});

test('the key is source/type/entity/bucket, readable, with entity and type visible', () => {
  assert.equal(keyEvent(registry, ev()).input.eventKey, 'campaigns/config.changed/campaign-42/2026-12-02T14:00:00Z');
});

test('bucket boundaries: the last ms of an hour and the first ms of the next are different events', () => {
  const before = keyEvent(registry, ev({ occurredAt: '2026-12-02T14:59:59.999Z' })).input.eventKey;
  const at = keyEvent(registry, ev({ occurredAt: '2026-12-02T15:00:00.000Z' })).input.eventKey;
  const start = keyEvent(registry, ev({ occurredAt: '2026-12-02T14:00:00.000Z' })).input.eventKey;
  assert.equal(before, start);
  assert.notEqual(before, at);
  assert.match(at, /2026-12-02T15:00:00Z$/);
});

test('time zones are normalised to UTC: one instant written in three zones is one key', () => {
  const keys = ['2026-12-02T14:05:00Z', '2026-12-02T15:05:00+01:00', '2026-12-02T09:05:00-05:00'].map(
    (t) => keyEvent(registry, ev({ occurredAt: t })).input.eventKey,
  );
  assert.equal(new Set(keys).size, 1);
  // ...and an instant that is 14:05 local in another zone is a different hour.
  assert.notEqual(keyEvent(registry, ev({ occurredAt: '2026-12-02T14:05:00+01:00' })).input.eventKey, keys[0]);
});

test('the delivery id and the delivery time never enter the key or the fingerprint', () => {
  const a = keyEvent(registry, ev({ deliveryId: 'msg-1' })).input;
  const b = keyEvent(registry, ev({ deliveryId: 'msg-2-redelivered' })).input;
  assert.equal(a.eventKey, b.eventKey);
  assert.equal(a.fingerprint, b.fingerprint);
  assert.equal(a.deliveryId, 'msg-1');
  // The gate takes no delivery time at all: an event keyed today and again next week is one key
  // as long as the event's own time is the same.
  assert.equal(keyEvent(registry, ev()).input.eventKey, a.eventKey);
});

test('a key too fine never deduplicates; a key too coarse drops distinct events', () => {
  const tooFine = defineTrigger({ ...campaign, source: 'fine', bucket: '1s', keyRationale: 'per-second bucket: shown to be too fine' });
  const tooCoarse = defineTrigger({ ...campaign, source: 'coarse', bucket: '30d', keyRationale: 'monthly bucket: shown to be too coarse' });
  const reg = new TriggerRegistry([tooFine, tooCoarse, campaign], probe('fine', 'coarse', 'campaigns'));
  // Two notifications about the same edit, 3 seconds apart (a webhook's retry re-stamps occurredAt):
  const edit = ['2026-12-02T14:05:00Z', '2026-12-02T14:05:03Z'];
  assert.equal(new Set(edit.map((t) => keyEvent(reg, ev({ source: 'fine', occurredAt: t })).input.eventKey)).size, 2, 'per-second: the retry is a second run');
  assert.equal(new Set(edit.map((t) => keyEvent(reg, ev({ occurredAt: t })).input.eventKey)).size, 1, 'hourly: one run');
  // Two real changes a week apart:
  const weekApart = ['2026-12-04T14:05:00Z', '2026-12-11T14:05:00Z']; // inside one epoch-aligned 30-day bucket
  const later = Date.parse('2026-12-12T00:00:00Z'); // the gate's clock: both changes lie in its past
  assert.equal(
    new Set(weekApart.map((t) => keyEvent(reg, ev({ source: 'coarse', occurredAt: t }), { nowMs: later }).input.eventKey)).size,
    1,
    'monthly: the second change is swallowed',
  );
  assert.equal(new Set(weekApart.map((t) => keyEvent(reg, ev({ occurredAt: t }), { nowMs: later }).input.eventKey)).size, 2, 'hourly: two runs');
});

test('components are escaped so distinct events never share a key', () => {
  const a = eventKey({ source: 's', type: 'a/b', entity: 'c', bucketStartMs: 0 });
  const b = eventKey({ source: 's', type: 'a', entity: 'b/c', bucketStartMs: 0 });
  assert.notEqual(a, b);
  assert.deepEqual(parseEventKey(b), { source: 's', type: 'a', entity: 'b/c', bucketStartMs: 0 });
  assert.equal(parseEventKey(keyEvent(registry, ev({ entity: 'acme/web%2' })).input.eventKey)?.entity, 'acme/web%2');
});

test('day buckets align to UTC midnight', () => {
  const ms = bucketStartMs(Date.parse('2026-03-29T23:30:00-04:00'), 86_400_000);
  assert.equal(new Date(ms).toISOString(), '2026-03-30T00:00:00.000Z');
});

test('fingerprint: only the named fields count, key order does not', () => {
  const a = keyEvent(registry, ev({ payload: { revision: 7, editor: 'ann' } })).input.fingerprint;
  const b = keyEvent(registry, ev({ payload: { editor: 'bob', revision: 7 } })).input.fingerprint;
  const c = keyEvent(registry, ev({ payload: { revision: 8 } })).input.fingerprint;
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.equal(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 1 }], c: null } }), '{"a":{"c":null,"d":[1,{"e":1,"f":2}]},"b":1}');
  assert.notEqual(fingerprint({ x: 1 }, 'payload'), fingerprint({ x: '1' }, 'payload'));
});

test('effect keys are stable and carry the event key, effect and step', () => {
  const k = eventKey({ source: 'ping', type: 't', entity: 'e', bucketStartMs: 0 });
  assert.equal(effectKey(k, 'post-summary', 2), 'ping/t/e/1970-01-01T00:00:00Z#post-summary@2');
  assert.equal(effectKey(k, 'post-summary', 2), effectKey(k, 'post-summary', 2));
});

test('bad input is refused with the field named', () => {
  const reg = registryOf();
  const refuse = (raw: unknown, code: string, path: string) => {
    assert.throws(
      () => keyEvent(reg, raw),
      (e: unknown) => e instanceof GateInputError && e.code === code && e.issues.some((i) => i.path === path),
    );
  };
  const ok = { source: 'ping', entity: 'x', type: 'check', occurredAt: '2026-12-02T14:05:00Z' };
  refuse({ ...ok, occurredAt: '2026-12-02 14:05' }, 'invalid_event', 'occurredAt');
  refuse({ ...ok, occurredAt: '2026-12-02T14:05:00' }, 'invalid_event', 'occurredAt'); // no zone
  refuse({ ...ok, entity: '' }, 'invalid_event', 'entity');
  refuse({ ...ok, entity: 'a\nb' }, 'invalid_event', 'entity');
  refuse({ ...ok, source: 'nope' }, 'unknown_source', 'source');
  refuse({ ...ok, payload: { holdMs: -1 } }, 'invalid_payload', 'payload.holdMs');
  refuse({ ...ok, extra: 1 }, 'invalid_event', '(event)');
  // The default registry has its own `campaigns` source now; a source no registry knows is unknown.
  refuse(ev({ source: 'not-registered', type: 'deleted' }), 'unknown_source', 'source');
  assert.throws(
    () => keyEvent(registry, ev({ type: 'deleted' })),
    (e: unknown) => e instanceof GateInputError && e.code === 'unknown_event_type',
  );
});

test('a bad trigger definition is refused at load time with every problem named', () => {
  assert.throws(() => defineTrigger({ ...campaign, source: 'Bad Source', bucket: '10ms', keyRationale: 'short' }), /source: .*bucket: .*keyRationale/s);
});

test('limits: a payload nested past the depth limit is refused by an iterative check, however deep (no stack overflow)', () => {
  const nest = (depth: number) => {
    let v: Record<string, unknown> = { leaf: 1 };
    for (let i = 1; i < depth; i++) v = { a: v };
    return v;
  };
  assert.equal(nestsDeeperThan(nest(EVENT_LIMITS.maxPayloadDepth), EVENT_LIMITS.maxPayloadDepth), false);
  assert.equal(nestsDeeperThan(nest(EVENT_LIMITS.maxPayloadDepth + 1), EVENT_LIMITS.maxPayloadDepth), true);
  // Arrays count like objects; scalars add no depth.
  assert.equal(nestsDeeperThan([[['x']]], 3), false);
  assert.equal(nestsDeeperThan([[[['x']]]], 3), true);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.equal(nestsDeeperThan(cyclic, 32), true);
  const ping = registryOf();
  const deep = nest(200_000); // JSON.stringify or a recursive fingerprint would overflow the stack on this
  assert.throws(
    () => keyEvent(ping, { source: 'ping', entity: 'e', type: 't', occurredAt: '2026-12-02T14:05:00Z', payload: deep }),
    (err: unknown) =>
      err instanceof GateInputError && err.code === 'payload_too_deep' && /deeper than 32 levels/.test(err.message) && err.issues[0]?.path === 'payload',
  );
  assert.doesNotThrow(() => keyEvent(ping, { source: 'ping', entity: 'e', type: 't', occurredAt: '2026-12-02T14:05:00Z', payload: nest(32) }));
});

test('limits: a payload over the size limit as compact JSON is refused; at the limit it passes', () => {
  const ping = registryOf();
  const ev = (note: string) => ({ source: 'ping', entity: 'e', type: 't', occurredAt: '2026-12-02T14:05:00Z', payload: { blob: note } });
  const overhead = JSON.stringify({ blob: '' }).length;
  assert.doesNotThrow(() => keyEvent(ping, ev('x'.repeat(EVENT_LIMITS.maxPayloadBytes - overhead))));
  assert.throws(
    () => keyEvent(ping, ev('x'.repeat(EVENT_LIMITS.maxPayloadBytes - overhead + 1))),
    (err: unknown) => err instanceof GateInputError && err.code === 'payload_too_large' && err.message.includes(`${EVENT_LIMITS.maxPayloadBytes + 1} bytes`),
  );
  // Bytes, not characters: a multi-byte character counts as its UTF-8 length.
  assert.throws(() => checkPayloadLimits({ blob: 'é'.repeat(EVENT_LIMITS.maxPayloadBytes / 2) }), /over the limit/);
});

test('limits: occurredAt in the future beyond the clock-skew tolerance, or before 2000, is refused naming the field', () => {
  const now = Date.parse('2026-12-02T14:00:00Z');
  const at = (iso: string) => keyEvent(registry, ev({ occurredAt: iso }), { nowMs: now });
  const refused = (err: unknown) =>
    err instanceof GateInputError && err.code === 'occurred_at_out_of_range' && err.issues[0]?.path === 'occurredAt' && /occurredAt/.test(err.message);
  assert.equal(EVENT_LIMITS.clockSkewMs, 5 * 60_000);
  assert.doesNotThrow(() => at('2026-12-02T14:05:00Z')); // exactly the tolerance ahead
  assert.throws(
    () => at('2026-12-02T14:05:00.001Z'),
    (err: unknown) => refused(err) && /in the future/.test((err as Error).message),
  );
  assert.throws(() => at('2027-01-01T00:00:00Z'), refused);
  assert.doesNotThrow(() => at('2000-01-01T00:00:00Z'));
  assert.throws(
    () => at('1999-12-31T23:59:59.999Z'),
    (err: unknown) => refused(err) && /before 2000-01-01/.test((err as Error).message),
  );
  assert.throws(() => at('1970-01-01T00:00:00Z'), refused);
  // Without an explicit clock the gate uses this process's.
  assert.throws(() => keyEvent(registry, ev({ occurredAt: new Date(Date.now() + 10 * 60_000).toISOString() })), refused);
  assert.doesNotThrow(() => keyEvent(registry, ev({ occurredAt: new Date(Date.now() + 60_000).toISOString() })));
  assert.throws(() => checkOccurredAt(now + EVENT_LIMITS.clockSkewMs + 1, now), refused);
});
