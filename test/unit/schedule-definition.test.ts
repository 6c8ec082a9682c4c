import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defineSchedule, type ScheduleDefinitionInput } from '../../schedules/definition';
import { instantsOfWallTime, wallTimeKind } from '../helpers/dst';
import { catchupWindowMs, definitionDigest, toScheduleOptions } from '../../schedules/to-temporal';
import { keyEvent } from '../../src/gate/gate';
import { checkScheduleAgents } from '../../schedules/sync';
import { registryOf, exampleApp } from '../helpers/app';

const base: ScheduleDefinitionInput = {
  id: 'unit-sched',
  description: 'unit',
  agent: 'canary',
  cadence: 'fixed_rate',
  spec: { every: '1m' },
  overlap: 'skip',
  catchUp: 'latest',
  rationale: 'a reconciliation of current state: run once after downtime',
};

describe('schedule definitions', () => {
  test('the project definitions are valid and map to Temporal schedules', () => {
    assert.ok(exampleApp.schedules.length >= 1);
    for (const d of exampleApp.schedules) {
      const o = toScheduleOptions(d, 'q', exampleApp.registry);
      assert.equal(o.action.type, 'startWorkflow');
      assert.equal(o.spec.timezone, 'UTC');
    }
  });

  test("a one-call agent's Schedule starts its run itself; a coalescing agent's starts a tick", () => {
    const direct = toScheduleOptions(defineSchedule(base), 'q', exampleApp.registry).action;
    assert.equal(direct.workflowType, 'runWorkflow');
    // Temporal appends `-<nominal>`: the run of 12:00 is canary@schedule/tick/unit-sched-2026-12-04T12:00:00Z.
    assert.equal(direct.workflowId, 'canary@schedule/tick/unit-sched');
    const [input] = direct.args as [{ scheduled: { scheduleId: string; catchUp: string; lateAfterMs: number }; fingerprint: string }];
    assert.deepEqual(input.scheduled, { scheduleId: 'unit-sched', catchUp: 'latest', lateAfterMs: 2000 });
    assert.equal(direct.memo?.fingerprint, input.fingerprint, 'the memo a gate compares, as on every run');
    const report = exampleApp.schedules.find((d) => d.agent === 'campaign-reporter')!;
    assert.equal(toScheduleOptions(report, 'q', exampleApp.registry).action.workflowType, 'scheduleTickWorkflow');
  });

  test('a local time zone without a DST policy is refused with a clear error', () => {
    assert.throws(
      () => defineSchedule({ ...base, spec: { cron: ['30 1 * * *'], timezone: 'America/New_York' } }),
      /dstPolicy: schedule "unit-sched" runs in time zone America\/New_York.*repeatedWallTime.*or use timezone "UTC"/,
    );
    const ok = defineSchedule({
      ...base,
      spec: { cron: ['30 1 * * *'], timezone: 'America/New_York' },
      dstPolicy: { repeatedWallTime: 'runs_twice', skippedWallTime: 'not_run' },
    });
    assert.equal(ok.spec?.timezone, 'America/New_York');
    // A DST policy Temporal does not implement is refused too, rather than silently not honoured.
    assert.throws(
      () =>
        defineSchedule({
          ...base,
          spec: { cron: ['30 1 * * *'], timezone: 'America/New_York' },
          dstPolicy: { repeatedWallTime: 'runs_once' as never, skippedWallTime: 'not_run' },
        }),
      /repeatedWallTime: Temporal fires a repeated wall time twice/,
    );
  });

  test('UTC needs no DST policy; unknown zones, missing rationale and contradictory policies are refused', () => {
    assert.equal(defineSchedule(base).spec?.timezone, 'UTC');
    assert.throws(() => defineSchedule({ ...base, spec: { every: '1m', timezone: 'Mars/Olympus' } }), /unknown time zone "Mars\/Olympus"/);
    assert.throws(() => defineSchedule({ ...base, rationale: 'because' }), /rationale/);
    assert.throws(() => defineSchedule({ ...base, catchUp: 'all', overlap: 'skip' }), /catchUp "all".*needs overlap "buffer_all"/);
    assert.throws(() => defineSchedule({ ...base, catchUp: 'skip', overlap: 'buffer_one' }), /catchUp "skip" refuses late windows/);
    assert.throws(() => defineSchedule({ ...base, spec: { every: '500ms' } }), /spec.every "500ms" must be a whole number of ms, at least 1000 ms/);
    assert.throws(() => defineSchedule({ ...base, spec: { every: '1m', cron: ['* * * * *'] } }), /exactly one of spec.every, spec.cron, spec.calendar/);
    assert.throws(() => defineSchedule({ ...base, cadence: 'fixed_delay' }), /fixed_delay needs delay/);
    assert.throws(() => defineSchedule({ ...base, agent: 'Not A Name' }), /agent/);
  });

  test('sync refuses a schedule whose agent is not woken by schedules or cannot derive its wake key', () => {
    assert.doesNotThrow(() => checkScheduleAgents(exampleApp.schedules, exampleApp.registry));
    assert.throws(
      () => checkScheduleAgents([defineSchedule({ ...base, agent: 'nobody' })], exampleApp.registry),
      /schedule ".*" cannot wake agent "nobody": agent "nobody" is not woken by source "schedule"/,
    );
    assert.throws(
      () => checkScheduleAgents([defineSchedule({ ...base, agent: 'dependency-bump' })], exampleApp.registry),
      /cannot wake agent "dependency-bump"/,
    );
    assert.throws(
      () => checkScheduleAgents([defineSchedule({ ...base, agent: 'campaign-reporter', payload: { dashboards: ['spend'] } })], exampleApp.registry),
      /campaign-reporter.*payload\.campaignId is required/,
    );
  });

  test('catch-up maps to Temporal catch-up windows; the digest changes with the definition only', () => {
    assert.equal(catchupWindowMs(defineSchedule({ ...base, catchUp: 'skip' })), 10_000);
    assert.equal(catchupWindowMs(defineSchedule({ ...base, catchUp: 'latest' })), 365 * 24 * 3_600_000);
    const a = defineSchedule(base);
    assert.equal(definitionDigest(a, 'q', exampleApp.registry), definitionDigest(defineSchedule(base), 'q', exampleApp.registry));
    assert.notEqual(
      definitionDigest(a, 'q', exampleApp.registry),
      definitionDigest(defineSchedule({ ...base, payload: { holdMs: 1 } }), 'q', exampleApp.registry),
    );
  });

  test('a scheduled window is keyed by (schedule, nominal second): two fires of one window share a key, neighbours do not', () => {
    const reg = registryOf();
    const ev = (occurredAt: string) => ({ source: 'schedule', entity: 'unit-sched', type: 'tick', occurredAt, payload: {} });
    const canary = { agent: 'canary' };
    const k1 = keyEvent(reg, ev('2026-12-02T14:00:01Z'), canary).input.eventKey;
    assert.equal(k1, 'schedule/tick/unit-sched/2026-12-02T14:00:01Z');
    assert.equal(keyEvent(reg, { ...ev('2026-12-02T14:00:01.000Z'), deliveryId: 'other-tick' }, canary).input.eventKey, k1);
    assert.notEqual(keyEvent(reg, ev('2026-12-02T14:00:02Z'), canary).input.eventKey, k1);
  });
});

describe('DST wall-time arithmetic (pure)', () => {
  const ny = 'America/New_York';
  test('a repeated hour: 01:30 on the fall-back day happens twice, an hour apart', () => {
    const at = instantsOfWallTime(ny, { year: 2026, month: 11, day: 1, hour: 1, minute: 30 });
    assert.deepEqual(
      at.map((t) => new Date(t).toISOString()),
      ['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z'],
    );
    assert.equal(wallTimeKind(ny, { year: 2026, month: 11, day: 1, hour: 1, minute: 30 }), 'repeated');
  });
  test('a skipped hour: 02:30 on the spring-forward day never happens', () => {
    assert.deepEqual(instantsOfWallTime(ny, { year: 2026, month: 3, day: 8, hour: 2, minute: 30 }), []);
    assert.equal(wallTimeKind(ny, { year: 2026, month: 3, day: 8, hour: 2, minute: 30 }), 'skipped');
  });
  test('an ordinary day, and UTC, have exactly one instant', () => {
    assert.deepEqual(instantsOfWallTime(ny, { year: 2026, month: 3, day: 9, hour: 2, minute: 30 }), [Date.parse('2026-03-09T06:30:00Z')]);
    assert.equal(wallTimeKind('UTC', { year: 2026, month: 11, day: 1, hour: 1, minute: 30 }), 'normal');
    assert.equal(wallTimeKind('Europe/Paris', { year: 2026, month: 10, day: 25, hour: 2, minute: 30 }), 'repeated');
    assert.equal(wallTimeKind('Europe/Paris', { year: 2026, month: 3, day: 29, hour: 2, minute: 30 }), 'skipped');
  });
});
