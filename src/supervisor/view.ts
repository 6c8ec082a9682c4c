import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { shadowRunKey, supervisorId } from '../core/ids';
import { LIVE_SESSION } from '../core/shadow';
import { WakeAgent, WakeEventKey, WakeHeld, WakeKey } from '../core/search-attributes';
import { supervisorStatusQuery } from '../core/supervisor-messages';
import type { SupervisorMemo, SupervisorStatus } from '../core/supervisor-types';

/** One held wake: the run that waits, what it is about, and since when. */
export interface HeldWake {
  workflowId: string;
  agent: string;
  wakeKey: string;
  eventKey: string;
  hold: string;
  since: string;
}

/** What `wakegate supervisor status` and the `/supervisor` page show. */
export interface SupervisorView {
  supervisorId: string;
  /** False until the first wake or worker brings the supervisor up. */
  running: boolean;
  status?: SupervisorStatus;
  /** When the status query could not be answered (no worker): the memo every process reads. */
  memo?: SupervisorMemo;
  statusError?: string;
  /** Live runs (open and not held), live shadows apart. */
  live: number;
  /** Live shadow runs open now (`shadow/live/<run key>`): they commit nothing, and `drain` does not wait for them. */
  liveShadows: number;
  /** Held wakes, by agent and wake key. */
  held: { total: number; byAgent: Record<string, Record<string, HeldWake[]>> };
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const openRuns = (taskQueue: string) => `WorkflowType = 'runWorkflow' AND TaskQueue = ${quote(taskQueue)} AND ExecutionStatus = 'Running'`;
const LIVE_SHADOW_PREFIX = shadowRunKey(LIVE_SESSION, '');
/** Held wakes listed in full up to this many (all are counted). */
const HELD_LISTED = 500;

/**
 * Runs of the task queue that are open and not held, live shadows apart (`runs`: what `drain`
 * waits for), and the live shadows open (`shadows`: never held, they end `discarded` instead).
 */
export async function liveRuns(client: Client, taskQueue: string): Promise<{ runs: number; shadows: number }> {
  const [open, held, shadows] = await Promise.all([
    client.workflow.count(openRuns(taskQueue)),
    client.workflow.count(`${openRuns(taskQueue)} AND WakeHeld IN ('halted', 'cap')`),
    client.workflow.count(`${openRuns(taskQueue)} AND WorkflowId STARTS_WITH ${quote(LIVE_SHADOW_PREFIX)}`),
  ]);
  return { runs: Math.max(0, open.count - held.count - shadows.count), shadows: shadows.count };
}

/** The supervisor's state, counters, held wakes and live runs, read from its query and from visibility. */
export async function supervisorView(client: Client, taskQueue: string): Promise<SupervisorView> {
  const id = supervisorId(taskQueue);
  const handle = client.workflow.getHandle(id);
  let running = true;
  let status: SupervisorStatus | undefined;
  let memo: SupervisorMemo | undefined;
  let statusError: string | undefined;
  try {
    const desc = await handle.describe();
    running = desc.status.name === 'RUNNING';
    memo = desc.memo?.supervisor as SupervisorMemo | undefined;
    status = await client.withDeadline(Date.now() + 5000, () => handle.query(supervisorStatusQuery));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) running = false;
    else statusError = `the supervisor did not answer its status query (is a worker running on "${taskQueue}"?): ${(err as Error).message}`;
  }
  const heldQuery = `${openRuns(taskQueue)} AND WakeHeld IN ('halted', 'cap')`;
  const [{ runs: live, shadows: liveShadows }, heldCount, heldRuns] = await Promise.all([
    liveRuns(client, taskQueue),
    client.workflow.count(heldQuery),
    list(client, heldQuery, HELD_LISTED),
  ]);
  const byAgent: SupervisorView['held']['byAgent'] = {};
  for (const info of heldRuns) {
    const sa = info.typedSearchAttributes;
    const w: HeldWake = {
      workflowId: info.workflowId,
      agent: sa.get(WakeAgent) ?? '(unknown)',
      wakeKey: sa.get(WakeKey) ?? '',
      eventKey: sa.get(WakeEventKey) ?? '',
      hold: sa.get(WakeHeld) ?? '',
      since: info.startTime.toISOString(),
    };
    ((byAgent[w.agent] ??= {})[w.wakeKey] ??= []).push(w);
  }
  return {
    supervisorId: id,
    running,
    ...(status ? { status } : {}),
    ...(memo && !status ? { memo } : {}),
    ...(statusError ? { statusError } : {}),
    live,
    liveShadows,
    held: { total: heldCount.count, byAgent },
  };
}

async function list(client: Client, query: string, bound: number): Promise<WorkflowExecutionInfo[]> {
  const out: WorkflowExecutionInfo[] = [];
  for await (const info of client.workflow.list({ query })) {
    out.push(info);
    if (out.length >= bound) break;
  }
  return out;
}
