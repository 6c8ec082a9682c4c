import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { addActions, eventTimeMs, historyActions, totalActions, zeroActions, type ActionCounts } from './cost-actions';

/**
 * What bench:cost reads back from Temporal: every execution on a task queue with its history, the
 * billable actions of those histories by workflow type (a standing workflow's within a measured
 * period only), when a queue has settled, and the activities a run made (for the bare workflow to
 * make the same).
 */

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const E = temporal.api.enums.v1.EventType;

export interface Execution {
  workflowId: string;
  runId: string;
  type: string;
  events: HistoryEvent[];
}

/** Every execution visibility lists for `query`, each with its whole history (continued-as-new runs are executions of their own). */
export async function executions(client: Client, query: string): Promise<Execution[]> {
  const out: Execution[] = [];
  for await (const wf of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    out.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type, events: history.events ?? [] });
  }
  return out;
}

/** History events and billable actions, summed. */
export interface Reading {
  executions: number;
  events: number;
  actions: ActionCounts;
}
export const emptyReading = (): Reading => ({ executions: 0, events: 0, actions: zeroActions() });

/**
 * The readings of `execs` by workflow type. `within`: only the events written in [fromMs, toMs] count
 * (a standing workflow's share of a measured period); an execution with none there is left out.
 */
export function readByType(execs: readonly Execution[], within?: { fromMs: number; toMs: number }): Record<string, Reading> {
  const out: Record<string, Reading> = {};
  for (const x of execs) {
    const events = within ? x.events.filter((e) => eventTimeMs(e) >= within.fromMs && eventTimeMs(e) <= within.toMs) : x.events;
    if (!events.length) continue;
    const read = historyActions(events);
    const r = (out[x.type] ??= emptyReading());
    r.executions += 1;
    r.events += read.events;
    r.actions = addActions(r.actions, read.actions);
  }
  return out;
}

export function sumReadings(rs: readonly Reading[]): Reading {
  return rs.reduce(
    (s, r) => ({ executions: s.executions + r.executions, events: s.events + r.events, actions: addActions(s.actions, r.actions) }),
    emptyReading(),
  );
}

export const actionsOf = (r: Reading) => totalActions(r.actions);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Until every run on `taskQueue` has closed, at least `minRuns` exist, and the histories of the
 * workflows still open there (coalescers waiting out their horizon, a schedule's ledger; not the
 * supervisor, which comes round by itself) stopped growing: two readings 2 s apart the same.
 */
export async function settle(client: Client, taskQueue: string, minRuns: number, supervisorId: string, timeoutMs = 180_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const count = (q: string) => client.workflow.count(`TaskQueue = "${taskQueue}" AND ${q}`).then((c) => c.count);
  let last = -1;
  while (Date.now() < deadline) {
    const runs = await count('WorkflowType = "runWorkflow"');
    const open = await count('WorkflowType = "runWorkflow" AND ExecutionStatus = "Running"');
    if (runs >= minRuns && open === 0) {
      let length = 0;
      for await (const wf of client.workflow.list({ query: `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"` })) {
        if (wf.workflowId === supervisorId) continue;
        length += Number((await client.workflow.getHandle(wf.workflowId, wf.runId).describe()).historyLength);
      }
      if (length === last) return runs;
      last = length;
    } else last = -1;
    await sleep(2000);
  }
  throw new Error(`task queue ${taskQueue} did not settle within ${timeoutMs} ms`);
}

/** The activities the bare workflow can make (tools/bench/bare-workflow.ts): a run's steps. */
export const STEP_ACTIVITIES = ['prepareRun', 'toolCall', 'modelTurn', 'commitEffect'] as const;
export type StepName = (typeof STEP_ACTIVITIES)[number];

/**
 * The activities a run scheduled, in order, with the inputs it gave them (from its history): the steps
 * among them, for a bare workflow to make with the same inputs, and the others by name, counted.
 */
export function activitiesOf(events: readonly HistoryEvent[]): { steps: { name: StepName; arg: unknown }[]; others: Record<string, number> } {
  const steps: { name: StepName; arg: unknown }[] = [];
  const others: Record<string, number> = {};
  for (const e of events) {
    if (e.eventType !== E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) continue;
    const a = e.activityTaskScheduledEventAttributes!;
    const name = a.activityType?.name ?? '?';
    if ((STEP_ACTIVITIES as readonly string[]).includes(name)) {
      const payload = a.input?.payloads?.[0];
      steps.push({
        name: name as StepName,
        arg: payload ? defaultPayloadConverter.fromPayload(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]) : undefined,
      });
    } else others[name] = (others[name] ?? 0) + 1;
  }
  return { steps, others };
}

/** How a run ended: its result's `terminalReason` and summary (or the close event's type when it did not complete). */
export function outcomeOf(events: readonly HistoryEvent[]): { reason: string; summary?: string } {
  const last = events[events.length - 1];
  const payload = last?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0];
  if (!payload) return { reason: last ? (E[last.eventType ?? 0] ?? 'open') : 'open' };
  const result = defaultPayloadConverter.fromPayload(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]) as
    { terminalReason?: string; summary?: string } | undefined;
  return { reason: result?.terminalReason ?? 'completed', ...(result?.summary ? { summary: result.summary } : {}) };
}
