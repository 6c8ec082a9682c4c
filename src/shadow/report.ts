import { WorkflowFailedError, type Client } from '@temporalio/client';
import { shadowRunKey } from '../core/ids';
import type { RunInput, RunResult } from '../core/run-types';
import { inputAndResult, recordedHistory } from '../trail/history-read';
import { mapLimit } from '../trail/read';
import { LIVE_SESSION, shadowAgentName } from '../core/shadow';
import { diffRun, summarize, type ShadowSummary, type RunDiff } from './diff';

/** What `wakegate shadow report` reads: the agent's live shadows closed in the window, diffed against their runs. */
export interface LiveShadowReport {
  summary: ShadowSummary;
  wakes: RunDiff[];
  /** Live shadows the supervisor did not let run (the shadow caps were full, or the fleet halted). */
  refused: { runKey: string; shadowRunKey: string; why: string }[];
  /** Live shadows that failed (a defect in the candidate), or whose run could not be read. */
  failed: { runKey: string; shadowRunKey: string; error: string }[];
}

/** Live shadows of one agent by outcome over a window: open, ran (diffed), refused (shadow caps or supervisor), failed. */
export interface LiveShadowCounts {
  running: number;
  ran: number;
  refused: number;
  failed: number;
}

/** Counts of an agent's live shadows from visibility (four counts, no history read): closed since `since`, and open now. */
export async function liveShadowCounts(client: Client, agent: string, since: Date): Promise<LiveShadowCounts> {
  const of = `WorkflowType = "runWorkflow" AND WakeAgent = ${quote(shadowAgentName(agent))}`;
  const closed = `${of} AND CloseTime >= ${quote(since.toISOString())}`;
  const count = async (q: string) => (await client.workflow.count(q)).count;
  const [running, completed, refused, failed] = await Promise.all([
    count(`${of} AND ExecutionStatus = "Running"`),
    count(`${closed} AND ExecutionStatus = "Completed"`),
    count(`${closed} AND ExecutionStatus = "Completed" AND WakeTerminalReason = "discarded"`),
    count(`${closed} AND ExecutionStatus != "Completed" AND ExecutionStatus != "Running" AND ExecutionStatus != "ContinuedAsNew"`),
  ]);
  return { running, ran: completed - refused, refused, failed };
}

const quote = (s: string) => `"${s.replace(/["\\]/g, '')}"`;
const liveShadowPrefix = shadowRunKey(LIVE_SESSION, '');

async function resultOf(client: Client, workflowId: string, runId?: string): Promise<RunResult> {
  return (await client.workflow.getHandle(workflowId, runId).result()) as RunResult;
}

const messageOf = (err: unknown) =>
  err instanceof WorkflowFailedError ? ((err.cause as Error | undefined)?.message ?? err.message) : err instanceof Error ? err.message : String(err);

/** Shadows read at once (each: its history's start and result, and the run it shadows). */
const READS_AT_ONCE = 8;

type Read =
  | { kind: 'wake'; wake: RunDiff }
  | { kind: 'refused'; refused: LiveShadowReport['refused'][number] }
  | { kind: 'failed'; failed: LiveShadowReport['failed'][number] };

/** One live shadow against the very run it shadows (its input's `origin.ofRunId`: a run key reset since has a newer run). */
async function diffOne(client: Client, workflowId: string, runId: string): Promise<Read> {
  const runKey = workflowId.slice(liveShadowPrefix.length);
  try {
    const after = await resultOf(client, workflowId, runId);
    const output = after.output as { shadowRefused?: string } | undefined;
    if (after.terminalReason === 'discarded' && output?.shadowRefused)
      return { kind: 'refused', refused: { runKey, shadowRunKey: workflowId, why: after.summary } };
    const { input } = inputAndResult(await recordedHistory(client, await client.workflow.getHandle(workflowId, runId).fetchHistory())) as { input?: RunInput };
    const ofRunId = input?.origin.kind === 'shadow' ? input.origin.ofRunId : undefined;
    return { kind: 'wake', wake: diffRun(await resultOf(client, runKey, ofRunId), after, workflowId) };
  } catch (err) {
    return { kind: 'failed', failed: { runKey, shadowRunKey: workflowId, error: messageOf(err) } };
  }
}

/**
 * Every live shadow of `agent` (its runs as `<agent>/shadow`, src/core/shadow.ts) that closed since
 * `since`, newest first, up to `limit`: each diffed against the run it shadows, as `wakegate shadow`
 * diffs a session's, the refused and the failed listed apart.
 */
export async function liveShadowReport(client: Client, q: { agent: string; since: Date; limit: number }): Promise<LiveShadowReport> {
  const query = [
    'WorkflowType = "runWorkflow"',
    `WakeAgent = ${quote(shadowAgentName(q.agent))}`,
    'ExecutionStatus != "Running"',
    `CloseTime >= ${quote(q.since.toISOString())}`,
  ].join(' AND ');
  const shadows: { workflowId: string; runId: string }[] = [];
  for await (const w of client.workflow.list({ query })) {
    if (!w.workflowId.startsWith(liveShadowPrefix)) continue;
    if (shadows.length >= q.limit) break;
    shadows.push({ workflowId: w.workflowId, runId: w.runId });
  }
  const read = await mapLimit(shadows, READS_AT_ONCE, (s) => diffOne(client, s.workflowId, s.runId));
  const wakes = read.flatMap((r) => (r.kind === 'wake' ? [r.wake] : []));
  const refused = read.flatMap((r) => (r.kind === 'refused' ? [r.refused] : []));
  const failed = read.flatMap((r) => (r.kind === 'failed' ? [r.failed] : []));
  return { summary: summarize(wakes), wakes, refused, failed };
}
