import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { defineSchedule, type ScheduleDefinitionInput } from '../../schedules/definition';
import { toScheduleOptions } from '../../schedules/to-temporal';
import { WakeTerminalReason } from '../../src/core/search-attributes';
import type { RunResult } from '../../src/core/run-types';
import { unique } from './env';
import { exampleApp } from './app';

/** A schedule definition with a unique id for one test. */
export function testSchedule(over: Partial<ScheduleDefinitionInput> & Pick<ScheduleDefinitionInput, 'overlap' | 'catchUp'>) {
  return defineSchedule({
    id: unique('sched'),
    description: 'test schedule',
    agent: 'canary',
    cadence: 'fixed_rate',
    spec: { every: '2s' },
    rationale: 'test: the policy under test is the one named in the test title',
    ...over,
  });
}

export async function createSchedule(client: Client, def: ReturnType<typeof testSchedule>, taskQueue: string) {
  return client.schedule.create(toScheduleOptions(def, taskQueue, exampleApp.registry));
}

async function list(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const rows: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query })) rows.push(wf);
  return rows;
}

/** The wakes a schedule's windows started (visibility; eventually consistent). */
export const wakesOf = (client: Client, scheduleId: string) => list(client, `WakeSource = "schedule" AND WakeEntity = "${scheduleId}"`);
/**
 * The workflows Temporal started for a schedule (scheduled, triggered and backfilled): the runs
 * themselves for a one-call agent, ticks for a coalescing one.
 */
export const ticksOf = (client: Client, scheduleId: string) => list(client, `TemporalScheduledById = "${scheduleId}"`);

export async function resultOf(client: Client, workflowId: string): Promise<RunResult> {
  return (await client.workflow.getHandle(workflowId).result()) as RunResult;
}

/** The nominal window of a wake, from its workflow ID (`…/<nominal>` through the gate, `…-<nominal>` from the Schedule). */
export const windowOf = (wake: WorkflowExecutionInfo) => /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$/.exec(wake.workflowId)![1]!;

/** The wakes that ran their window (not those that found it taken, or that the catch-up policy declined). */
export const ranOf = (wakes: WorkflowExecutionInfo[]) =>
  wakes.filter((w) => !['duplicate', 'skipped'].includes(w.typedSearchAttributes.get(WakeTerminalReason) ?? ''));

/** True if two of the runs were open at the same time (closed runs only, plus at most one still open). */
export function overlapping(runs: WorkflowExecutionInfo[]): boolean {
  const sorted = [...runs].sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  for (let i = 1; i < sorted.length; i++) {
    const prevClose = sorted[i - 1]!.closeTime?.getTime() ?? Infinity;
    if (sorted[i]!.startTime.getTime() < prevClose) return true;
  }
  return false;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
