import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { CoalescerInput, CoalescerState } from '../core/coalesce-types';
import { batchRunKey, batchRunToken, chainOf, coalescerId } from '../core/ids';
import { coalescerQuery, statusQuery } from '../core/messages';
import { WakeDeliveryIds, WakeEventKey, WakeHeld } from '../core/search-attributes';
import type { RunInput, RunResult, ScheduledRunInput } from '../core/run-types';
import { answersFromHistory } from './coalescer';
import { inputAndResult, recordedHistory } from './history-read';
import type { Recorded, RecordedCoalescer, RecordedRun } from './recorded';
import type { RecordedEvent } from './history';

/** What to read, and how much. */
export interface ReadRequest {
  agent: string;
  wakeKey: string;
  coalescing: boolean;
  sinceMs: number;
  untilMs: number;
  maxRuns: number;
  maxEvents: number;
  /** How long an open workflow's query may take (it needs a worker polling), ms. */
  queryTimeoutMs: number;
}

/** Histories and records read at once. */
const PARALLEL = 8;

/** `fn` over `items`, at most `limit` at once, results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * A visibility string literal: double-quoted, with a backslash before each backslash and double
 * quote (Temporal's query parser reads MySQL-style escapes), so any value is one literal and stays
 * one: quotes of both kinds, or a trailing backslash, cannot end it early or leave it open.
 */
export function literal(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The visibility query of the runs about one (agent, wake key) that started in the window, or are still open. */
export function runsQuery(agent: string, wakeKey: string, sinceMs: number): string {
  return (
    `WorkflowType = "runWorkflow" AND WakeAgent = ${literal(agent)} AND WakeKey = ${literal(wakeKey)} AND ExecutionStatus != "ContinuedAsNew" ` +
    `AND (StartTime >= "${new Date(sinceMs).toISOString()}" OR ExecutionStatus = "Running")`
  );
}

const notFound = <T>(err: unknown, value: T): T => {
  if (err instanceof WorkflowNotFoundError) return value;
  throw err;
};

/** One workflow by ID (its newest run, or `runId`): status, times, history and result. */
async function readWorkflow(client: Client, workflowId: string, runId?: string) {
  const handle = client.workflow.getHandle(workflowId, runId);
  const desc = await handle.describe().catch((err: unknown) => notFound(err, undefined));
  if (!desc) return undefined;
  const history = await recordedHistory(client, await client.workflow.getHandle(workflowId, desc.runId).fetchHistory());
  return { desc, history, ...inputAndResult(history) };
}

async function readRun(client: Client, req: ReadRequest, workflowId: string, listed?: WorkflowExecutionInfo): Promise<RecordedRun | undefined> {
  const wf = await readWorkflow(client, workflowId, listed?.runId);
  if (!wf) return undefined;
  const { desc } = wf;
  const sa = (listed ?? desc).typedSearchAttributes;
  const rec: RecordedRun = {
    workflowId,
    runId: desc.runId,
    status: desc.status.name,
    startedAt: desc.startTime.toISOString(),
    ...(desc.closeTime ? { closedAt: desc.closeTime.toISOString() } : {}),
    indexed: {
      deliveryIds: sa.get(WakeDeliveryIds) ?? [],
      ...(sa.get(WakeEventKey) ? { eventKey: sa.get(WakeEventKey) } : {}),
      ...(sa.get(WakeHeld) ? { held: sa.get(WakeHeld) } : {}),
    },
    ...(wf.input ? { input: wf.input as RunInput | ScheduledRunInput } : {}),
    ...(wf.closedStatus === 'COMPLETED' && wf.result ? { result: wf.result as RunResult } : {}),
    history: wf.history,
  };
  if (desc.status.name === 'RUNNING') {
    const live = await client
      .withDeadline(Date.now() + req.queryTimeoutMs, () => client.workflow.getHandle(workflowId, desc.runId).query(statusQuery))
      .catch(() => undefined);
    if (live) rec.live = live;
  }
  return rec;
}

/** The chain's first run, from the history's start (`firstExecutionRunId`). */
const chainRunOf = (history: readonly RecordedEvent[]) => history.find((e) => e.kind === 'started')?.firstRunId;

const VIA: Record<RecordedCoalescer['readVia'], string> = {
  query: 'state from its coalescer query',
  result: 'state from its result',
  history: 'its query went unanswered (no worker polling?): its answers read from its history',
  input: 'only the state it started with',
  none: 'state not readable',
};

/** The coalescer's executions in the window, oldest first, each with the state it holds. */
async function readCoalescers(client: Client, req: ReadRequest, looked: string[]): Promise<RecordedCoalescer[]> {
  const id = coalescerId(req.agent, req.wakeKey);
  const earlier: WorkflowExecutionInfo[] = [];
  const query = `WorkflowId = ${literal(id)} AND ExecutionStatus = "Completed" AND CloseTime >= "${new Date(req.sinceMs).toISOString()}"`;
  for await (const wf of client.workflow.list({ query, pageSize: 5 })) if (earlier.push(wf) >= 5) break;
  const current = await readWorkflow(client, id);
  const runIds = [...new Set([...earlier.map((w) => w.runId).reverse(), ...(current ? [current.desc.runId] : [])])];
  const out = await mapLimit(runIds, PARALLEL, async (runId): Promise<RecordedCoalescer | undefined> => {
    const wf = runId === current?.desc.runId ? current : await readWorkflow(client, id, runId);
    if (!wf) return undefined;
    const input = wf.input as CoalescerInput | undefined;
    const base = {
      workflowId: id,
      runId,
      status: wf.desc.status.name,
      startedAt: wf.desc.startTime.toISOString(),
      ...(wf.desc.closeTime ? { closedAt: wf.desc.closeTime.toISOString() } : {}),
      ...(input?.policy ? { policy: input.policy } : {}),
    };
    if (wf.closedStatus === 'COMPLETED' && wf.result) return { ...base, state: wf.result as CoalescerState, readVia: 'result' };
    if (wf.desc.status.name === 'RUNNING') {
      const status = await client
        .withDeadline(Date.now() + req.queryTimeoutMs, () => client.workflow.getHandle(id, runId).query(coalescerQuery, { seenLast: req.maxEvents }))
        .catch(() => undefined);
      if (status) return { ...base, state: status.state, seenCount: status.seenCount, readVia: 'query' };
    }
    // Open but unanswered (no worker polls): its answers are in its history, and the offer a new chain
    // was started with in its input. A fresh chain's first offer always opens its first batch
    // (`decideFirst` in workflows/coalescer/machine.ts, which the gate answered with).
    if (wf.desc.status.name === 'RUNNING') {
      const at = base.startedAt;
      const opened = input?.first && !input.state ? input.first : undefined;
      const answer = opened && {
        decision: 'started',
        coalescerId: id,
        // Named by the chain's first run, as the workflow names it: a run reset by hand has an ID of its own.
        runKey: batchRunKey(req.agent, req.wakeKey, batchRunToken(opened.event.eventKey, chainOf(chainRunOf(wf.history) ?? runId), 1)),
      };
      const first = opened
        ? ([
            { kind: 'update', at, id: '#first', name: 'offer', input: [opened] },
            { kind: 'update-done', at, id: '#first', result: [answer] },
          ] as const)
        : [];
      return { ...base, state: answersFromHistory(input?.state, [...first, ...wf.history]), readVia: 'history' };
    }
    return input?.state ? { ...base, state: input.state, readVia: 'input' } : { ...base, readVia: 'none' };
  });
  const read = out.filter((c): c is RecordedCoalescer => c !== undefined && c.status !== 'CONTINUED_AS_NEW');
  looked.push(
    read.length
      ? `coalescer ${id}: ${read.map((c) => `${c.status.toLowerCase()} run ${c.runId} (${VIA[c.readVia]})`).join('; ')}`
      : `coalescer ${id}: none found (by ID, and visibility: ${query})`,
  );
  return read;
}

/**
 * Read what Temporal records about one (agent, wake key) in a window: the runs visibility lists
 * (search attributes WakeAgent, WakeKey), each with its history, result and, while open, its
 * `status` query; for a coalescing agent the coalescer `agent#wakeKey` (its query while open, its
 * result once closed, and earlier executions closed in the window), with the newest entries of its
 * dedup table up to the cap, and the runs it names. Says in `looked` what it read.
 */
export async function readRecorded(client: Client, req: ReadRequest): Promise<Recorded> {
  const looked: string[] = [];
  const query = runsQuery(req.agent, req.wakeKey, req.sinceMs);
  const listed: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query, pageSize: Math.min(req.maxRuns, 100) })) if (listed.push(wf) >= req.maxRuns) break;
  const total = listed.length >= req.maxRuns ? (await client.workflow.count(query)).count : listed.length;
  looked.push(`visibility: ${query} (${total} run${total === 1 ? '' : 's'}${total > listed.length ? `, the newest ${listed.length} read` : ''})`);

  const coalescers = req.coalescing ? await readCoalescers(client, req, looked) : [];
  // Runs the coalescer names that visibility did not list (a run indexes itself in its first workflow task).
  const named = coalescers.flatMap((c) => [
    ...(c.state?.running ? [c.state.running.runKey] : []),
    ...(c.state?.runs ?? []).filter((x) => Date.parse(x.startedAt) >= req.sinceMs || !x.endedAt).map((x) => x.runKey),
  ]);
  const extra = [...new Set(named)].filter((k) => !listed.some((w) => w.workflowId === k)).slice(0, Math.max(0, req.maxRuns - listed.length));
  const runs = (
    await mapLimit([...listed.map((w) => [w.workflowId, w] as const), ...extra.map((k) => [k, undefined] as const)], PARALLEL, ([id, w]) =>
      readRun(client, req, id, w),
    )
  ).filter((r): r is RecordedRun => r !== undefined);
  const live = runs.filter((r) => r.status === 'RUNNING');
  looked.push(
    `run histories: ${runs.length} read${extra.length ? ` (${extra.length} named by the coalescer, by ID)` : ''}` +
      (live.length
        ? `; status query answered by ${live.filter((r) => r.live).length} of ${live.length} open (an open run answers only while a worker polls)`
        : ''),
  );

  const current = coalescers.at(-1);
  const eventsNotRead = Math.max(0, (current?.seenCount ?? 0) - (current?.state?.seen.length ?? 0));
  if (current?.state)
    looked.push(
      `dedup table of ${current.workflowId}: ${current.state.seen.length} event${current.state.seen.length === 1 ? '' : 's'} read` +
        (eventsNotRead ? `; ${eventsNotRead} older not read (cap ${req.maxEvents})` : '') +
        (current.state.seenFloorMs
          ? `; ${current.state.counts.forgottenEarly ?? 'some'} events, decided before ${new Date(current.state.seenFloorMs).toISOString()}, left it early (size bound): a redelivery of one runs again`
          : ''),
    );
  return {
    agent: req.agent,
    wakeKey: req.wakeKey,
    path: req.coalescing ? 'coalescing' : 'one-call',
    since: new Date(req.sinceMs).toISOString(),
    until: new Date(req.untilMs).toISOString(),
    runs,
    runsNotRead: total - listed.length,
    coalescers,
    eventsNotRead,
    looked,
  };
}
