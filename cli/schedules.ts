import type { Client, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import type { ScheduleDefinition } from '../schedules/definition';
import { scheduleDefinitions } from '../schedules/definitions';
import { backfillSchedule, describeSchedule, scheduleGaps, triggerSchedule } from '../schedules/inspect';
import { syncSchedules } from '../schedules/sync';
import { overlapFromName } from '../schedules/to-temporal';
import { ExitCode, printJson, reportError, UsageError } from './output';

async function withClient(fn: (client: Client, taskQueue: string) => Promise<unknown>): Promise<number> {
  const config = loadConfig();
  const client = await connectClient(config);
  try {
    printJson(await fn(client, config.taskQueue));
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}

function definitionOf(id: string): ScheduleDefinition {
  const def = scheduleDefinitions.find((d) => d.id === id);
  if (!def) throw new UsageError(`no schedule "${id}" in schedules/definitions.ts: known ${scheduleDefinitions.map((d) => d.id).join(', ')}`);
  return def;
}

function overlapOpt(value: string | undefined): ScheduleOverlapPolicy | undefined {
  if (value === undefined) return undefined;
  try {
    return overlapFromName(value);
  } catch (err) {
    throw new UsageError(`--overlap: ${(err as Error).message}`);
  }
}

function timeOpt(flag: string, value: string): Date {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms) || !/(Z|[+-]\d{2}:?\d{2})$/.test(value)) throw new UsageError(`${flag} must be ISO-8601 with a zone, e.g. 2026-12-02T14:00:00Z`);
  return new Date(ms);
}

const run = (fn: () => Promise<number>) => async () => {
  process.exitCode = await fn().catch(reportError);
};

/** `wakegate schedules sync|list|trigger|backfill|gaps`: one JSON object on stdout each. */
export function registerSchedules(program: Command): void {
  const cmd = program.command('schedules').description('Schedules in code (schedules/definitions.ts), held by Temporal Schedules.');
  cmd
    .command('sync')
    .description('Upsert the schedules from code: create missing, update changed, never unpause; --prune removes dropped ones.')
    .option('--prune', "delete wakegate's schedules that are no longer in code")
    .action((opts: { prune?: boolean }) =>
      run(() => withClient((client, taskQueue) => syncSchedules({ client, taskQueue, definitions: scheduleDefinitions, prune: !!opts.prune })))(),
    );
  cmd
    .command('list')
    .description('Per schedule: policy, next and recent runs, skipped/missed counts, buffer, paused state and note.')
    .action(() => run(() => withClient(async (client) => ({ schedules: await Promise.all(scheduleDefinitions.map((d) => describeSchedule(client, d))) })))());
  cmd
    .command('trigger <id>')
    .description("Run a schedule now, with the schedule's own overlap policy unless --overlap says otherwise.")
    .option('--overlap <policy>', 'skip | buffer_one | buffer_all | cancel | terminate | allow_all')
    .action((id: string, opts: { overlap?: string }) =>
      run(() => withClient((client) => triggerSchedule(client, definitionOf(id).id, overlapOpt(opts.overlap))))(),
    );
  cmd
    .command('backfill <id>')
    .description("Run the windows in [start, end] now, with the schedule's own overlap policy unless --overlap says otherwise.")
    .requiredOption('--start <iso>', 'first nominal time, ISO-8601 with zone')
    .requiredOption('--end <iso>', 'last nominal time, ISO-8601 with zone')
    .option('--overlap <policy>', 'skip | buffer_one | buffer_all | cancel | terminate | allow_all')
    .action((id: string, opts: { start: string; end: string; overlap?: string }) =>
      run(() =>
        withClient((client) =>
          backfillSchedule(client, definitionOf(id).id, timeOpt('--start', opts.start), timeOpt('--end', opts.end), overlapOpt(opts.overlap)),
        ),
      )(),
    );
  cmd
    .command('gaps <id>')
    .description('The durable records of windows that did not run (skipped by policy, missed while down).')
    .action((id: string) => run(() => withClient((client) => scheduleGaps(client, definitionOf(id).id)))());
}
