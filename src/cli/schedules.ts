import type { Client, ScheduleOverlapPolicy } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import type { ScheduleDefinition } from '../../schedules/definition';
import { app } from './app';
import { backfillSchedule, describeSchedule, scheduleGaps, triggerSchedule } from '../../schedules/inspect';
import { syncSchedules } from '../../schedules/sync';
import { overlapFromName } from '../../schedules/to-temporal';
import { ExitCode, printJson, UsageError } from './output';

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
  const schedules = app().schedules;
  const def = schedules.find((d) => d.id === id);
  if (!def) throw new UsageError(`no schedule "${id}" in this deployment: known ${schedules.map((d) => d.id).join(', ')}`);
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

/** `schedules sync [--prune]`: upsert the definitions in code; never unpauses. */
export function syncCommand(opts: { prune?: boolean }): Promise<number> {
  return withClient((client, taskQueue) => syncSchedules({ client, taskQueue, definitions: app().schedules, registry: app().registry, prune: !!opts.prune }));
}

/** `schedules list`: every schedule in code as Temporal holds it. */
export function listCommand(): Promise<number> {
  return withClient(async (client) => ({ schedules: await Promise.all(app().schedules.map((d) => describeSchedule(client, d))) }));
}

/** `schedules trigger <id> [--overlap P]`: arguments are checked before any connection is made. */
export function triggerCommand(id: string, opts: { overlap?: string }): Promise<number> {
  const scheduleId = definitionOf(id).id;
  const overlap = overlapOpt(opts.overlap);
  return withClient((client) => triggerSchedule(client, scheduleId, overlap));
}

/** `schedules backfill <id> --start ISO --end ISO [--overlap P]`. */
export function backfillCommand(id: string, opts: { start: string; end: string; overlap?: string }): Promise<number> {
  const scheduleId = definitionOf(id).id;
  const [start, end, overlap] = [timeOpt('--start', opts.start), timeOpt('--end', opts.end), overlapOpt(opts.overlap)];
  return withClient((client) => backfillSchedule(client, scheduleId, start, end, overlap));
}

/** `schedules gaps <id>`: the ledger's gap records. */
export function gapsCommand(id: string): Promise<number> {
  const scheduleId = definitionOf(id).id;
  return withClient((client) => scheduleGaps(client, scheduleId));
}
