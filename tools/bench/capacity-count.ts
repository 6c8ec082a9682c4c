import type { Client, ConnectionOptions } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/**
 * What bench:capacity counts: the Temporal operations a path cost, read from the histories of every
 * workflow execution on the path's task queue (continued-as-new runs and children included), and
 * the gRPC calls the entry process (gate, ingress, queue consumer) made. Counts, not rates: they do
 * not depend on how loaded the machine is.
 */

/** The operations of one or more histories, summed. */
export interface OpCounts {
  executions: number;
  workflowTasks: number;
  activityTasks: number;
  updates: number;
  signals: number;
  timers: number;
  children: number;
  continuedAsNew: number;
  historyEvents: number;
  historyBytes: number;
}

export const zeroCounts = (): OpCounts => ({
  executions: 0,
  workflowTasks: 0,
  activityTasks: 0,
  updates: 0,
  signals: 0,
  timers: 0,
  children: 0,
  continuedAsNew: 0,
  historyEvents: 0,
  historyBytes: 0,
});

/** Which attribute of a history event marks which count. */
const MARKS: Record<string, keyof OpCounts> = {
  workflowExecutionStartedEventAttributes: 'executions',
  workflowTaskScheduledEventAttributes: 'workflowTasks',
  activityTaskScheduledEventAttributes: 'activityTasks',
  workflowExecutionUpdateAcceptedEventAttributes: 'updates',
  workflowExecutionSignaledEventAttributes: 'signals',
  timerStartedEventAttributes: 'timers',
  startChildWorkflowExecutionInitiatedEventAttributes: 'children',
  workflowExecutionContinuedAsNewEventAttributes: 'continuedAsNew',
};

/** The counts of one history. */
export function countHistory(history: temporal.api.history.v1.IHistory): OpCounts {
  const c = zeroCounts();
  for (const event of history.events ?? []) {
    c.historyEvents++;
    for (const [attr, key] of Object.entries(MARKS)) if ((event as Record<string, unknown>)[attr]) c[key]++;
  }
  c.historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  return c;
}

export function addCounts(a: OpCounts, b: OpCounts): OpCounts {
  const out = zeroCounts();
  for (const k of Object.keys(out) as (keyof OpCounts)[]) out[k] = a[k] + b[k];
  return out;
}

/** Every count divided by `n`, to three decimals. */
export function perEvent(c: OpCounts, n: number): OpCounts {
  const out = zeroCounts();
  for (const k of Object.keys(out) as (keyof OpCounts)[]) out[k] = Math.round((c[k] / n) * 1000) / 1000;
  return out;
}

/**
 * The histories of every execution `query` lists (visibility), summed by workflow type. `extra`:
 * executions visibility does not list (a Schedule's own scheduler workflow), fetched by ID when they
 * exist; one that does not is left out and named in `missing`.
 */
export async function historyCosts(client: Client, query: string, extra: { type: string; workflowId: string }[] = []) {
  const byType: Record<string, OpCounts> = {};
  const add = (type: string, c: OpCounts) => (byType[type] = addCounts(byType[type] ?? zeroCounts(), c));
  for await (const wf of client.workflow.list({ query })) {
    add(wf.type, countHistory(await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()));
  }
  const missing: string[] = [];
  for (const x of extra) {
    try {
      add(x.type, countHistory(await client.workflow.getHandle(x.workflowId).fetchHistory()));
    } catch {
      missing.push(x.workflowId);
    }
  }
  return { byType, missing };
}

type GrpcInterceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/**
 * Counts the entry process's gRPC calls by method (StartWorkflowExecution, ExecuteMultiOperation for
 * an update-with-start, SignalWithStartWorkflowExecution, DescribeWorkflowExecution, ...), for a
 * client's Connection. `take()` returns the calls since the last take.
 */
export function rpcCounter(): { interceptor: GrpcInterceptor; take(): Record<string, number> } {
  let calls: Record<string, number> = {};
  const interceptor: GrpcInterceptor = (options, nextCall) => {
    const method = String(options.method_definition.path).split('/').pop() ?? '?';
    calls[method] = (calls[method] ?? 0) + 1;
    // The next call as it is: this interceptor only counts (grpc-js takes any intercepting call here).
    return nextCall(options) as ReturnType<GrpcInterceptor>;
  };
  return {
    interceptor,
    take() {
      const out = calls;
      calls = {};
      return out;
    },
  };
}
