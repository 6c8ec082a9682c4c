import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { WakeEventInput } from '../core/event';
import type { AbsorbedEvent, RunInput, RunResult, TerminalReason } from '../core/run-types';
import type { EffectSlot } from '../core/effect-slots';
import type { Gate } from '../gate/gate';
import { GateInputError } from '../gate/errors';
import { replayInput, type ReplayAnswer } from '../gate/replay';
import { carriedFrom } from '../commit/executions';
import { coalescerQuery } from '../core/messages';
import { inputAndResult, recordedHistory } from '../trail/history-read';
import type { RecordedEvent } from '../trail/history';

/*
 * `wakegate replay`: an agent's recorded runs run again once their cause is fixed. Each recorded run
 * is one logical run; its replay is an execution again of it, under its own workflow ID
 * (src/gate/replay.ts), on its events as today's definitions validate them, its effects under the
 * keys its earlier executions gave them (src/core/effect-slots.ts).
 */

export interface ReplayQuery {
  agent: string;
  /** Runs closed at or after this time. */
  since: Date;
  /** The terminal reason of the latest execution; by default `failed` (and `cancelled` with `includeCancelled`). */
  reason?: TerminalReason;
  wakeKey?: string;
  limit: number;
  /** Also runs a person killed or terminated, or a halt cancelled (never a superseded run). */
  includeCancelled?: boolean;
  /** An epoch the operator named: a run whose latest execution succeeded may run again under it. */
  epoch?: string;
}

/** A recorded run to replay: its key, its latest execution, how that ended, its events, its slots' keys. */
export interface ReplayCandidate {
  workflowId: string;
  /** The run ID of its latest execution: the replay follows it. */
  runId: string;
  terminalReason?: TerminalReason;
  /** Its own event first (a batch's opener), then the rest of a batch's and those skipped on it. */
  events: WakeEventInput[];
  effects: EffectSlot[];
}

/** What became of one recorded run's replay. */
export type ReplayOutcome = (ReplayAnswer | { decision: 'refused' | 'invalid'; message: string }) & { of: string; terminalReason?: TerminalReason };

const quote = (s: string) => JSON.stringify(s);
const SCHEDULED = 'a window its Schedule started: no event to send again (backfill its Schedule instead)';

/** The events skipped on a run (overlap `skip`), as the records its coalescer sent it carry them. */
function skippedEvents(history: readonly RecordedEvent[]): AbsorbedEvent[] {
  return history.flatMap((e) => (e.kind === 'signal' && e.name === 'skipped' ? ((e.input as { events?: AbsorbedEvent[] })?.events ?? []) : []));
}

/**
 * Why a recorded run cannot be replayed as it was, or undefined when it can. Its history is read for
 * steered events (a run that took events while live holds them in no input a replay could send) and
 * for the events skipped on it, which its replay runs too.
 */
export function whyNotReplayed(input: RunInput, result: RunResult | undefined, history: readonly RecordedEvent[] = []): string | undefined {
  const { origin } = input;
  if (origin.kind === 'window') return SCHEDULED;
  if (origin.kind === 'shadow') return 'a shadow run';
  const steered = result?.steered?.length || input.resumedHold?.steered?.taken.length || history.some((e) => e.kind === 'update' && e.name === 'steer');
  if (steered) return 'events were steered into it while it ran, and no input holds them';
  const skippedBare = skippedEvents(history).filter((e) => !e.payload).length + (result?.skippedOverflow ?? 0);
  if (skippedBare) return `${skippedBare} of the events skipped on it were recorded without their payloads`;
  if (origin.kind !== 'batch') return undefined;
  if (origin.absorbedOverflow) return `its batch held ${origin.absorbedOverflow} events past its bound, kept as a count only`;
  const missing = origin.absorbed.filter((e) => !e.payload).length;
  return missing ? `${missing} of its events were recorded without their payloads` : undefined;
}

/** How a latest execution ended, for the choice: its terminal reason, or from its status when it recorded none. */
export function reasonOf(status: string, result: RunResult | undefined): TerminalReason | undefined {
  if (result?.terminalReason) return result.terminalReason;
  if (status === 'FAILED' || status === 'TIMED_OUT') return 'failed';
  if (status === 'TERMINATED' || status === 'CANCELLED') return 'cancelled';
  return undefined;
}

/**
 * Whether a logical run's latest execution is one to replay: `{ take: true }`, `{ take: false }`
 * (another reason than asked: not listed), or why not (listed). Failed runs by default; another
 * reason when asked; a run a person stopped (killed, terminated, cancelled by a halt) only with
 * `includeCancelled`, since it runs what that person stopped; a superseded run never (the run that
 * restarted on the newest state took its events and landed its effects under its own keys); a run
 * whose latest execution succeeded only under a named epoch.
 */
export function replayChoice(
  latest: { status: string; result?: RunResult; replayEpoch?: string },
  q: Pick<ReplayQuery, 'reason' | 'includeCancelled' | 'epoch'>,
): { take: true } | { take: false; why?: string } {
  const { result } = latest;
  const reason = reasonOf(latest.status, result);
  if (result?.supersededBy) return { take: false, why: `superseded by ${result.supersededBy}, which took its events` };
  if (latest.replayEpoch && (latest.replayEpoch === q.epoch || (reason === 'success' && q.reason !== 'success')))
    return { take: false, why: `already replayed: its latest execution (${latest.replayEpoch}) ended ${reason}` };
  const stopped = reason === 'cancelled';
  if (stopped && !q.includeCancelled && (!q.reason || q.reason === 'cancelled'))
    return { take: false, why: `${result?.killedBy ? `killed by ${result.killedBy.who}` : 'stopped by a person'}: replay it only with --include-cancelled` };
  const asked = q.reason ? reason === q.reason : reason === 'failed' || (stopped && q.includeCancelled);
  if (!asked) return { take: false };
  if (reason === 'success' && !q.epoch) return { take: false, why: 'its latest execution succeeded: name an --epoch to run it again' };
  return { take: true };
}

const asEvent = (e: Pick<RunInput, 'source' | 'entity' | 'type' | 'occurredAt' | 'payload'>): WakeEventInput => ({
  source: e.source,
  entity: e.entity,
  type: e.type,
  occurredAt: e.occurredAt,
  payload: e.payload,
});

/** A recorded run's events: its own first, then the rest of its batch and those skipped on it, once each. */
export function eventsOf(input: RunInput, history: readonly RecordedEvent[] = []): WakeEventInput[] {
  const rest = input.replay?.events ?? (input.origin.kind === 'batch' ? input.origin.absorbed : []);
  const seen = new Set([input.eventKey]);
  const more = [...rest, ...skippedEvents(history)].filter((e) => !seen.has(e.eventKey) && seen.add(e.eventKey));
  return [asEvent(input), ...more.map((e) => asEvent({ ...e, payload: e.payload ?? {} }))];
}

/**
 * A coalesced run its coalescer still holds as its live run (it has not yet seen it closed: a run
 * terminated by hand, say) is not replayed until it has: the coalescer signals and watches its live
 * run by workflow ID, and a replay under that ID would be taken for it.
 */
async function stillLiveFor(client: Client, input: RunInput, runKey: string): Promise<string | undefined> {
  if (input.origin.kind !== 'batch') return undefined;
  const coalescer = client.workflow.getHandle(input.origin.coalescerId);
  const open = await coalescer.describe().then(
    (d) => d.status.name === 'RUNNING',
    () => false,
  );
  if (!open) return undefined;
  const status = await coalescer.query(coalescerQuery, { seenLast: 0 }).catch(() => undefined);
  return status?.state.running?.runKey === runKey ? 'its coalescer still holds it as its live run: replay it once the coalescer has seen it end' : undefined;
}

async function describe(client: Client, workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * The agent's logical runs with an execution closed in the window, oldest first (so a later state is
 * replayed last), each judged by its latest execution ({@link replayChoice}), with its events and its
 * slots' keys. A run chosen but whose events cannot be sent again is listed, with why.
 */
export async function replayCandidates(
  client: Client,
  q: ReplayQuery,
): Promise<{ runs: ReplayCandidate[]; notReplayed: { workflowId: string; why: string }[] }> {
  const clauses = [
    'WorkflowType = "runWorkflow"',
    'ExecutionStatus != "Running"',
    'ExecutionStatus != "ContinuedAsNew"',
    `WakeAgent = ${quote(q.agent)}`,
    `CloseTime >= ${quote(q.since.toISOString())}`,
    ...(q.wakeKey ? [`WakeKey = ${quote(q.wakeKey)}`] : []),
  ];
  const runs: ReplayCandidate[] = [];
  const notReplayed: { workflowId: string; why: string }[] = [];
  const looked = new Set<string>();
  for await (const w of client.workflow.list({ query: clauses.join(' AND ') })) {
    if (runs.length >= q.limit) break;
    if (looked.has(w.workflowId)) continue;
    looked.add(w.workflowId);
    const latest = await describe(client, w.workflowId);
    if (!latest) continue;
    if (latest.status.name === 'RUNNING') {
      notReplayed.push({ workflowId: w.workflowId, why: 'running now: an execution of it is open (a replay, or a restart by a redelivery)' });
      continue;
    }
    const history = await recordedHistory(client, await client.workflow.getHandle(w.workflowId, latest.runId).fetchHistory());
    const { input, result } = inputAndResult(history) as { input?: RunInput; result?: RunResult };
    const replayEpoch = input?.replay?.epoch;
    const choice = replayChoice({ status: latest.status.name, ...(result ? { result } : {}), ...(replayEpoch ? { replayEpoch } : {}) }, q);
    if (!choice.take) {
      if (choice.why) notReplayed.push({ workflowId: w.workflowId, why: choice.why });
      continue;
    }
    const why = input?.origin ? (whyNotReplayed(input, result, history) ?? (await stillLiveFor(client, input, w.workflowId))) : SCHEDULED;
    if (why || !input) {
      notReplayed.push({ workflowId: w.workflowId, why: why ?? SCHEDULED });
      continue;
    }
    const reason = reasonOf(latest.status.name, result);
    runs.push({
      workflowId: w.workflowId,
      runId: latest.runId,
      ...(reason ? { terminalReason: reason } : {}),
      events: eventsOf(input, history),
      effects: (await carriedFrom(client, w.workflowId, latest.runId)).slots,
    });
  }
  return { runs: runs.reverse(), notReplayed };
}

/**
 * Replay each candidate in turn: its events keyed by today's definitions (one they refuse makes the
 * run `invalid`, with the gate's reason, and nothing is sent for it), then started by the gate.
 */
export async function replayRuns(gate: Gate, agent: string, runs: ReplayCandidate[], namedEpoch?: string): Promise<ReplayOutcome[]> {
  const out: ReplayOutcome[] = [];
  for (const run of runs) {
    const base = { of: run.workflowId, ...(run.terminalReason ? { terminalReason: run.terminalReason } : {}) };
    let input: RunInput;
    try {
      const keyed = run.events.map((e) => gate.key(e, { agent }));
      input = replayInput({ of: run.workflowId, after: run.runId, agent, effects: run.effects, keyed, ...(namedEpoch ? { namedEpoch } : {}) });
    } catch (err) {
      if (!(err instanceof GateInputError)) throw err;
      out.push({ ...base, decision: 'invalid', message: err.message });
      continue;
    }
    out.push({ ...base, ...(await gate.admitReplay(input, run.runId)) });
  }
  return out;
}
