import { z } from 'zod';
import { Name } from '../src/trigger/definition';
import { Duration, parseDefinition } from '../src/core/parse';

const Field = z.union([z.number().int().min(0), z.array(z.number().int().min(0)).nonempty()]);
const DAYS = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'] as const;

/** When a fixed-rate schedule fires. Exactly one of `every`, `cron`, `calendar`. */
export const ScheduleSpecSchema = z
  .strictObject({
    /** Fixed interval, e.g. "1h"; at least 1 s (Temporal's nominal times have second precision). */
    every: Duration('spec.every', 1000).optional(),
    /** Phase of the interval from the Unix epoch, e.g. every "1h" offset "5m" fires at :05. */
    offset: Duration('spec.offset', 0).optional(),
    /** Cron expressions (5 or 6 fields), evaluated in `timezone`. */
    cron: z.array(z.string().min(1)).nonempty().optional(),
    /** Calendar entries: each field a value or a list of values; absent = Temporal's default (0 for time fields, every day). */
    calendar: z
      .array(
        z.strictObject({
          second: Field.optional(),
          minute: Field.optional(),
          hour: Field.optional(),
          dayOfMonth: Field.optional(),
          month: Field.optional(),
          dayOfWeek: z.array(z.enum(DAYS)).nonempty().optional(),
          comment: z.string().optional(),
        }),
      )
      .nonempty()
      .optional(),
    /** IANA zone the cron/calendar wall times are read in. Default UTC; anything else needs `dstPolicy`. */
    timezone: z.string().min(1).default('UTC'),
  })
  .superRefine((spec, ctx) => {
    const kinds = [spec.every, spec.cron, spec.calendar].filter((k) => k !== undefined).length;
    if (kinds !== 1) ctx.addIssue({ code: 'custom', message: 'give exactly one of spec.every, spec.cron, spec.calendar' });
    if (spec.offset !== undefined && spec.every === undefined) ctx.addIssue({ code: 'custom', path: ['offset'], message: 'spec.offset needs spec.every' });
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: spec.timezone });
    } catch {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: `unknown time zone "${spec.timezone}" (use an IANA name such as "Europe/Paris", or "UTC")` });
    }
  });

/**
 * What happens to a wall time that a DST transition repeats or skips. These are the only values
 * accepted because they are what Temporal's scheduler does (checked against the real server in
 * test/dev-server/schedules-dst.test.ts): a repeated wall time (01:30 on a fall-back day) fires twice, once per
 * offset; a skipped wall time (02:30 on a spring-forward day) does not fire that day. Writing them
 * down is the point: a local-time schedule must say it knows this. Anyone who needs "once" should
 * schedule in UTC and convert at the edges.
 */
export const DstPolicySchema = z.strictObject({
  repeatedWallTime: z.literal('runs_twice', {
    error: 'dstPolicy.repeatedWallTime: Temporal fires a repeated wall time twice; write "runs_twice", or schedule in UTC',
  }),
  skippedWallTime: z.literal('not_run', {
    error: 'dstPolicy.skippedWallTime: Temporal does not fire a wall time that does not exist; write "not_run", or schedule in UTC',
  }),
});

export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'buffer_all', 'cancel', 'terminate'] as const;
export const CATCH_UP_POLICIES = ['all', 'latest', 'skip'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/**
 * A schedule in code. Every scheduled run passes the gate with the logical event key
 * (source `schedule`, type `tick`, entity = `id`, nominal window), so a window fired twice runs once,
 * and wakes the named agent about the wake key that agent derives from the payload.
 */
export const ScheduleDefinitionSchema = z
  .strictObject({
    /** Schedule id in Temporal (and the entity of its event keys). */
    id: Name,
    description: z.string().min(1),
    /**
     * The agent its wakes run: any agent whose `triggers` include `schedule` (checked by sync). Only
     * this agent is woken, with its own wake key derived from the tick's event: the tick and any
     * other trigger about the same thing reach the same coalescer.
     */
    agent: Name,
    /**
     * The wake's payload, from which the agent derives its wake key (the campaign reporter reads
     * `campaignId`; the canary reads `holdMs`). Part of the fingerprint.
     */
    payload: z.record(z.string(), z.unknown()).default({}),
    /** `fixed_rate`: a Temporal Schedule on `spec`. `fixed_delay`: the next run starts `delay` after the previous one ends. */
    cadence: z.enum(['fixed_rate', 'fixed_delay']),
    spec: ScheduleSpecSchema.optional(),
    /** For `fixed_delay`: the gap between the end of one run and the start of the next; at least 1 s. */
    delay: Duration('delay', 1000).optional(),
    /** What to do when a window comes due while the previous run is still going. */
    overlap: z.enum(OVERLAP_POLICIES).default('skip'),
    /** What to do with windows missed while the scheduler could not fire (server down, paused catch-up). */
    catchUp: z.enum(CATCH_UP_POLICIES),
    /**
     * For `catchUp: skip`: a tick that starts more than this after its nominal time is a missed
     * window: it is not run and is recorded as a gap. Default "2s".
     */
    lateAfter: Duration('lateAfter', 500).default(2000),
    /** Random delay 0..jitter added to every fire (Temporal's spec jitter). Default none. */
    jitter: Duration('jitter', 0).optional(),
    /** Pause the schedule when a run fails (Temporal's pauseOnFailure). Default false. */
    pauseOnFailure: z.boolean().default(false),
    /** Required for a non-UTC `spec.timezone`; see {@link DstPolicySchema}. */
    dstPolicy: DstPolicySchema.optional(),
    /** Why these overlap / catch-up / cadence choices: written so nobody infers them from behaviour. */
    rationale: z.string().min(20, 'rationale: say in a sentence why this overlap, catch-up and cadence'),
  })
  .superRefine((d, ctx) => {
    if (d.cadence === 'fixed_rate') {
      if (!d.spec) ctx.addIssue({ code: 'custom', path: ['spec'], message: 'cadence fixed_rate needs spec (every, cron or calendar)' });
      if (d.delay !== undefined) ctx.addIssue({ code: 'custom', path: ['delay'], message: 'delay is for cadence fixed_delay; fixed_rate uses spec' });
    } else {
      if (d.delay === undefined) ctx.addIssue({ code: 'custom', path: ['delay'], message: 'cadence fixed_delay needs delay, e.g. "10m"' });
      if (d.spec) ctx.addIssue({ code: 'custom', path: ['spec'], message: 'cadence fixed_delay has no spec: it runs, waits delay, runs again' });
    }
    const tz = d.spec?.timezone ?? 'UTC';
    if (tz !== 'UTC' && tz !== 'Etc/UTC' && !d.dstPolicy) {
      ctx.addIssue({
        code: 'custom',
        path: ['dstPolicy'],
        message:
          `schedule "${d.id}" runs in time zone ${tz}, so a DST transition repeats or skips wall times: state ` +
          `dstPolicy { repeatedWallTime: "runs_twice", skippedWallTime: "not_run" } (what Temporal does), or use timezone "UTC"`,
      });
    }
    // Temporal applies overlap to catch-up starts too, so only buffer_all lets every missed window run.
    if (d.catchUp === 'all' && d.cadence === 'fixed_rate' && d.overlap !== 'buffer_all') {
      ctx.addIssue({
        code: 'custom',
        path: ['overlap'],
        message: `catchUp "all" runs every missed window one after another: it needs overlap "buffer_all" (with "${d.overlap}" Temporal would drop most of them)`,
      });
    }
    // A buffered tick starts late by design; catchUp skip would then refuse it as a missed window.
    if (d.catchUp === 'skip' && (d.overlap === 'buffer_one' || d.overlap === 'buffer_all')) {
      ctx.addIssue({
        code: 'custom',
        path: ['catchUp'],
        message: `catchUp "skip" refuses late windows, overlap "${d.overlap}" runs them late on purpose: pick catchUp "latest" or "all", or overlap skip/cancel/terminate`,
      });
    }
  });

export type ScheduleDefinitionInput = z.input<typeof ScheduleDefinitionSchema>;
export type ScheduleDefinition = z.output<typeof ScheduleDefinitionSchema>;

/** Validate a schedule definition; a bad one fails at load time with every problem named. */
export function defineSchedule(def: ScheduleDefinitionInput): ScheduleDefinition {
  return parseDefinition(ScheduleDefinitionSchema, def, 'schedule', def?.id);
}
