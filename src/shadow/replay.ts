import type { Client } from '@temporalio/client';
import type { WakeEventInput } from '../core/event';
import type { CommitInput } from '../core/contracts';
import type { ReplayOf, RunInput, RunResult, TerminalReason } from '../core/run-types';
import type { Gate } from '../gate/gate';
import { GateInputError } from '../gate/errors';
import { replayInput, type ReplayAnswer } from '../gate/replay';
import { inputAndResult, recordedHistory } from '../trail/history-read';
import type { RecordedEvent } from '../trail/history';

/*
 * `wakegate replay`: an agent's recorded runs run again once their cause is fixed. Each recorded run
 * is one replay, `<its key>/replay` (src/gate/replay.ts): its events, as today's definitions
 * validate them, the effects it began with their keys, and the epoch that names this replay.
 */

export interface ReplayQuery {
  agent: string;
  /** Runs closed at or after this time. */
  since: Date;
  reason?: TerminalReason;
  wakeKey?: string;
  limit: number;
}

/** A recorded run to replay: its key, how it ended, its events, the effects it began. */
export interface ReplayCandidate {
  workflowId: string;
  runId: string;
  terminalReason?: TerminalReason;
  /** Its own event first (a batch's opener), then the rest of a batch's. */
  events: WakeEventInput[];
  effects: ReplayOf['effects'];
}

/** What became of one recorded run's replay. */
export type ReplayOutcome = (ReplayAnswer | { decision: 'refused' | 'invalid'; message: string }) & { of: string; terminalReason?: TerminalReason };

const quote = (s: string) => JSON.stringify(s);
const SCHEDULED = 'a window its Schedule started: no event to send again (backfill its Schedule instead)';

/**
 * Why a recorded run cannot be replayed as it was, or undefined when it can. Its history is read for
 * steered events: a run that took events while live holds them in no input a replay could send.
 */
export function whyNotReplayed(input: RunInput, result: RunResult | undefined, history: readonly RecordedEvent[] = []): string | undefined {
  const { origin } = input;
  if (origin.kind === 'window') return SCHEDULED;
  if (origin.kind === 'shadow') return 'a shadow run';
  const steered = result?.steered?.length || input.resumedHold?.steered?.taken.length || history.some((e) => e.kind === 'update' && e.name === 'steer');
  if (steered) return 'events were steered into it while it ran, and no input holds them';
  if (origin.kind !== 'batch') return undefined;
  if (origin.absorbedOverflow) return `its batch held ${origin.absorbedOverflow} events past its bound, kept as a count only`;
  const missing = origin.absorbed.filter((e) => !e.payload).length;
  return missing ? `${missing} of its events were recorded without their payloads` : undefined;
}

/** The effects a recorded run began (its `commitEffect` activities), in order, once each. */
export function effectsBegun(history: readonly RecordedEvent[]): ReplayOf['effects'] {
  const out = new Map<string, string>();
  for (const e of history) {
    if (e.kind !== 'activity' || e.activityType !== 'commitEffect' || !e.input) continue;
    const c = e.input as CommitInput;
    if (!out.has(c.effectKey)) out.set(c.effectKey, c.effect.name);
  }
  return [...out].map(([effectKey, effect]) => ({ effect, effectKey }));
}

const asEvent = (e: Pick<RunInput, 'source' | 'entity' | 'type' | 'occurredAt' | 'payload'>): WakeEventInput => ({
  source: e.source,
  entity: e.entity,
  type: e.type,
  occurredAt: e.occurredAt,
  payload: e.payload,
});

/** A recorded run's events: its own first, then the rest of its batch. */
function eventsOf(input: RunInput): WakeEventInput[] {
  if (input.origin.kind !== 'batch') return [asEvent(input)];
  const rest = input.origin.absorbed.filter((e) => e.eventKey !== input.eventKey);
  return [asEvent(input), ...rest.map((e) => asEvent({ ...e, payload: e.payload ?? {} }))];
}

/**
 * The agent's closed runs in the window, oldest first (so a later state is replayed last), each with
 * its events and the effects it began. A replay is never replayed itself (a later epoch replays its
 * original); a run whose events cannot be sent again is listed, with why.
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
    ...(q.reason ? [`WakeTerminalReason = ${quote(q.reason)}`] : []),
  ];
  const runs: ReplayCandidate[] = [];
  const notReplayed: { workflowId: string; why: string }[] = [];
  for await (const w of client.workflow.list({ query: clauses.join(' AND ') })) {
    if (runs.length >= q.limit) break;
    const history = await recordedHistory(client, await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory());
    const { input, result } = inputAndResult(history) as { input?: RunInput; result?: RunResult };
    if (input?.replay) continue; // a replay: a later epoch replays its original
    const why = input?.origin ? whyNotReplayed(input, result, history) : SCHEDULED;
    if (why || !input) {
      notReplayed.push({ workflowId: w.workflowId, why: why ?? SCHEDULED });
      continue;
    }
    const reason = result?.terminalReason ?? (w.searchAttributes?.WakeTerminalReason?.[0] as TerminalReason | undefined);
    runs.push({
      workflowId: w.workflowId,
      runId: w.runId,
      ...(reason ? { terminalReason: reason } : {}),
      events: eventsOf(input),
      effects: effectsBegun(history),
    });
  }
  return { runs: runs.reverse(), notReplayed };
}

/**
 * Replay each candidate in turn: its events keyed by today's definitions (one they refuse makes the
 * run `invalid`, with the gate's reason, and nothing is sent for it), then started by the gate.
 */
export async function replayRuns(gate: Gate, agent: string, runs: ReplayCandidate[], epoch: string): Promise<ReplayOutcome[]> {
  const out: ReplayOutcome[] = [];
  for (const run of runs) {
    const base = { of: run.workflowId, ...(run.terminalReason ? { terminalReason: run.terminalReason } : {}) };
    let input: RunInput;
    try {
      input = replayInput({ of: run.workflowId, epoch, agent, effects: run.effects, keyed: run.events.map((e) => gate.key(e, { agent })) });
    } catch (err) {
      if (!(err instanceof GateInputError)) throw err;
      out.push({ ...base, decision: 'invalid', message: err.message });
      continue;
    }
    out.push({ ...base, ...(await gate.admitReplay(input)) });
  }
  return out;
}
