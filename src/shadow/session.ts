import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { SHADOW_PREFIX } from '../core/ids';
import { shadowInput, whyNotShadowed } from '../core/shadow';
import type { RunInput, RunResult, TerminalReason } from '../core/run-types';
import { recordedHistory, inputAndResult } from '../trail/history-read';
import type { RecordedToolCall } from '../core/recorded-tools';
import { recordedToolCalls } from './recorded-tools';
import { diffRun, summarize, type ShadowSummary, type RunDiff } from './diff';

/** Which recorded runs to shadow: the agent's closed runs in a window, newest first. */
export interface RecordedRunsQuery {
  agent: string;
  /** Runs closed at or after this time. */
  since: Date;
  wakeKey?: string;
  reason?: TerminalReason;
  limit: number;
  /** `recorded`: read each run's tool calls too, for its shadow to be answered from (default `live`: tools are called). */
  tools?: 'live' | 'recorded';
}

/** A recorded run with the input it was started with and the result it ended with. */
export interface RecordedRun {
  workflowId: string;
  runId: string;
  input: RunInput;
  result: RunResult;
  /** Its tool calls and their answers, when the shadow is to be answered from them. */
  tools?: RecordedToolCall[];
}

/** A recorded run not shadowed, and why. */
export interface NotShadowed {
  workflowId: string;
  why: string;
}

/** How long a shadow run may stay open at most (a recorded run's own wall-clock budget bounds it before this). */
const SHADOW_RUN_TIMEOUT = '1 day';

const quote = (s: string) => `"${s.replace(/["\\]/g, '')}"`;

/**
 * The agent's completed runs in the window (never a shadow run), each with its input and result
 * read from its history. A schedule's window started by its Schedule (no run input of its own) and a
 * run with no result are listed as not shadowed.
 */
export async function recordedRuns(client: Client, q: RecordedRunsQuery): Promise<{ runs: RecordedRun[]; notShadowed: NotShadowed[] }> {
  const clauses = [
    'WorkflowType = "runWorkflow"',
    'ExecutionStatus = "Completed"',
    `WakeAgent = ${quote(q.agent)}`,
    `CloseTime >= ${quote(q.since.toISOString())}`,
    ...(q.wakeKey ? [`WakeKey = ${quote(q.wakeKey)}`] : []),
    ...(q.reason ? [`WakeTerminalReason = ${quote(q.reason)}`] : []),
  ];
  const runs: RecordedRun[] = [];
  const notShadowed: NotShadowed[] = [];
  for await (const w of client.workflow.list({ query: clauses.join(' AND ') })) {
    if (w.workflowId.startsWith(SHADOW_PREFIX)) continue;
    if (runs.length >= q.limit) break;
    const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    const { input, result } = inputAndResult(await recordedHistory(client, history));
    const why = whyNotShadowed(input as Partial<RunInput> | undefined, result as RunResult | undefined);
    if (why) notShadowed.push({ workflowId: w.workflowId, why });
    else
      runs.push({
        workflowId: w.workflowId,
        runId: w.runId,
        input: input as RunInput,
        result: result as RunResult,
        ...(q.tools === 'recorded' ? { tools: await recordedToolCalls(client, history) } : {}),
      });
  }
  return { runs, notShadowed };
}

export interface ShadowSessionOptions {
  client: Client;
  connection: NativeConnection;
  namespace: string;
  /** The deployment holding the candidate definition of the agent. */
  candidate: { worker(opts: { connection: NativeConnection; namespace: string; taskQueue: string }): Promise<Worker> };
  runs: RecordedRun[];
  /** Names the session's run IDs and task queue; default: a fresh one. */
  session?: string;
  /** Shadow runs in flight at once. */
  concurrency?: number;
}

export interface ShadowReport {
  session: string;
  taskQueue: string;
  summary: ShadowSummary;
  wakes: RunDiff[];
  /** Shadow runs that failed to end with a result (a defect in the candidate): the recorded run and the error. */
  failed: { runKey: string; shadowRunKey: string; error: string }[];
}

/**
 * Run the candidate on each recorded run's events, in a worker of this process on a task queue of the
 * session's own (so the candidate's code runs without being deployed), and diff each against the
 * recorded run. Tools and the model run live (tools are read-only by contract); effects are recorded,
 * never carried out.
 */
export async function shadowSession(o: ShadowSessionOptions): Promise<ShadowReport> {
  const session = o.session ?? `${new Date().toISOString().slice(0, 16).replace(/[-:T]/g, '')}-${randomUUID().slice(0, 6)}`;
  const taskQueue = `wakegate-shadow-${session}`;
  const worker = await o.candidate.worker({ connection: o.connection, namespace: o.namespace, taskQueue });
  const wakes: RunDiff[] = [];
  const failed: ShadowReport['failed'] = [];
  await worker.runUntil(async () => {
    let next = 0;
    const one = async (run: RecordedRun) => {
      const input = shadowInput(session, run);
      try {
        const result = await o.client.workflow.execute<(i: RunInput) => Promise<RunResult>>('runWorkflow', {
          workflowId: input.runKey,
          taskQueue,
          args: [input],
          // Its worker is this process: should the process die, Temporal closes the run rather than leave it open on a queue no one polls.
          workflowExecutionTimeout: SHADOW_RUN_TIMEOUT,
        });
        wakes.push(diffRun(run.result, result, input.runKey));
      } catch (err) {
        failed.push({
          runKey: run.workflowId,
          shadowRunKey: input.runKey,
          error: err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err),
        });
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(o.concurrency ?? 4, o.runs.length) }, async () => {
        while (next < o.runs.length) await one(o.runs[next++]!);
      }),
    );
  });
  const order = new Map(o.runs.map((r, i) => [r.workflowId, i]));
  wakes.sort((a, b) => order.get(a.runKey)! - order.get(b.runKey)!);
  return { session, taskQueue, summary: summarize(wakes), wakes, failed };
}
