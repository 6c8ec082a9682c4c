import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { scheduleMatchingTimes } from '../../activities/schedule/schedule';
import { defineSchedule } from '../../schedules/definition';
import { instantsOfWallTime } from '../helpers/dst';
import { toScheduleOptions } from '../../schedules/to-temporal';
import { useDevEnv, unique } from '../helpers/env';
import { exampleApp } from '../helpers/app';

// The DST policy a definition must state is what Temporal's scheduler really does: checked here.
const env = useDevEnv();

const local = (hour: number) =>
  defineSchedule({
    id: unique('dst'),
    description: 'dst',
    agent: 'canary',
    cadence: 'fixed_rate',
    spec: { calendar: [{ hour, minute: 30 }], timezone: 'America/New_York' },
    overlap: 'skip',
    catchUp: 'latest',
    dstPolicy: { repeatedWallTime: 'runs_twice', skippedWallTime: 'not_run' },
    rationale: 'dst test: daily local-time run, policy stated',
  });

describe('DST transitions in Temporal schedules (dev server)', () => {
  test('a repeated wall time (01:30 on fall-back day) fires twice: runs_twice', async () => {
    const def = local(1);
    await env.client.schedule.create({ ...toScheduleOptions(def, 'nowhere', exampleApp.registry), state: { paused: true } });
    const times = await scheduleMatchingTimes(env.client, def.id, Date.parse('2026-11-01T00:00:00Z'), Date.parse('2026-11-01T12:00:00Z'));
    const expected = instantsOfWallTime('America/New_York', { year: 2026, month: 11, day: 1, hour: 1, minute: 30 });
    assert.equal(expected.length, 2);
    assert.deepEqual(times, expected);
  });

  test('a skipped wall time (02:30 on spring-forward day) does not fire that day: not_run', async () => {
    const def = local(2);
    await env.client.schedule.create({ ...toScheduleOptions(def, 'nowhere', exampleApp.registry), state: { paused: true } });
    const times = await scheduleMatchingTimes(env.client, def.id, Date.parse('2026-03-07T12:00:00Z'), Date.parse('2026-03-09T12:00:00Z'));
    assert.deepEqual(
      times.map((t) => new Date(t).toISOString()),
      ['2026-03-09T06:30:00.000Z'],
      'nothing on 2026-03-08, the next day at 02:30 EDT',
    );
    assert.deepEqual(instantsOfWallTime('America/New_York', { year: 2026, month: 3, day: 8, hour: 2, minute: 30 }), []);
  });
});
