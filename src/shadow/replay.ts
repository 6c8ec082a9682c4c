import type { Client } from '@temporalio/client';
import type { WakeEventInput } from '../core/event';
import { replayEventKey } from '../core/ids';
import type { AbsorbedEvent, RunInput, RunResult, TerminalReason } from '../core/run-types';
import type { Decision } from '../core/decision';
import type { Gate } from '../gate/gate';
import { GateInputError } from '../gate/errors';
import { inputAndResult, recordedHistory } from '../trail/history-read';

/*
 * `wakegate replay`: the events of an agent's recorded runs sent through the gate again, under a
 * replay epoch. The gate keys each as the original's key under the epoch (src/core/ids.ts
 * `replayEventKey`), so the original's dedup never refuses it and a second replay in the same epoch
 * meets the first one's (Temporal's workflow ID on the one-call path, the coalescer's dedup table,
 * and before either, a look in visibility for a run that already took the key). The run it wakes
 * commits under the recorded run's effect keys (`effectBaseOf`), so what the original landed is found.
 */

export interface ReplayQuery {
  agent: string;
  /** Runs closed at or after this time. */
  since: Date;
  reason?: TerminalReason;
  wakeKey?: string;
  limit: number;
}

/** One event of a recorded run, as it goes through the gate again. */
export interface ReplayEvent {
  eventKey: string;
  /** Its key in this epoch. */
  replayKey: string;
  event: WakeEventInput;
}

/** A recorded run to replay: its key, how it ended, and its events. */
export interface ReplayCandidate {
  workflowId: string;
  runId: string;
  terminalReason?: TerminalReason;
  events: ReplayEvent[];
}

/** What the gate answered for one replayed event, or `already_replayed` when a run of this epoch took it before. */
export interface ReplayedEvent {
  eventKey: string;
  replayKey: string;
  decision: Decision | 'already_replayed' | 'invalid';
  /** The run (or for `already_replayed`, the earlier replay's run) that took it. */
  workflowId?: string;
  message?: string;
}

const quote = (s: string) => `"${s.replace(/["\\]/g, '')}"`;

const SCHEDULED = 'a window its Schedule started: no event to send again (its Schedule can be backfilled)';

/** Why a recorded run's events cannot be sent again as they were, or undefined when they can. */
export function whyNotReplayed(input: RunInput): string | undefined {
  const { origin } = input;
  if (origin.kind === 'window') return SCHEDULED;
  if (origin.kind === 'shadow') return 'a shadow run';
  if (origin.kind !== 'batch') return undefined;
  if (origin.absorbedOverflow) return `its batch held ${origin.absorbedOverflow} events past its bound, kept as a count only`;
  const missing = origin.absorbed.filter((e) => !e.payload).length;
  return missing ? `${missing} of its events were recorded without their payloads` : undefined;
}

/** The events a recorded run took, with their payloads: its batch's, or its own one event. */
const eventsOf = (input: RunInput): Omit<AbsorbedEvent, 'deliveryIds'>[] => (input.origin.kind === 'batch' ? input.origin.absorbed : [input]);

/** The replay's delivery id (tracing only): says where the event came from. */
const replayDelivery = (epoch: string) => `replay/${epoch}`;

/**
 * The agent's closed runs in the window, newest first, each with its events as the gate will take
 * them again. Replays are never replayed themselves (a later epoch replays the original); a run whose
 * events cannot be sent again is listed, with why.
 */
export async function replayCandidates(
  client: Client,
  q: ReplayQuery,
  epoch: string,
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
    const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    const { input, result } = inputAndResult(await recordedHistory(client, history)) as { input?: RunInput; result?: RunResult };
    if (!input?.origin) {
      notReplayed.push({ workflowId: w.workflowId, why: SCHEDULED });
      continue;
    }
    const why = whyNotReplayed(input);
    const events = why ? [] : eventsOf(input);
    if (input.replay || events.some((e) => e.replay)) continue; // a replay: a later epoch replays its original
    if (why) {
      notReplayed.push({ workflowId: w.workflowId, why });
      continue;
    }
    const reason = result?.terminalReason ?? (w.searchAttributes?.WakeTerminalReason?.[0] as TerminalReason | undefined);
    runs.push({
      workflowId: w.workflowId,
      runId: w.runId,
      ...(reason ? { terminalReason: reason } : {}),
      events: events.map((e) => ({
        eventKey: e.eventKey,
        replayKey: replayEventKey(e.eventKey, epoch),
        event: { source: e.source, entity: e.entity, type: e.type, occurredAt: e.occurredAt, payload: e.payload ?? {}, deliveryId: replayDelivery(epoch) },
      })),
    });
  }
  return { runs, notReplayed };
}

/** A run of this agent that already took the key (any status): a replay of this epoch ran before. */
async function takenBy(client: Client, agent: string, key: string): Promise<string | undefined> {
  const query = `WorkflowType = "runWorkflow" AND WakeAgent = ${quote(agent)} AND (WakeEventKey = ${quote(key)} OR WakeAbsorbedEventKeys = ${quote(key)})`;
  for await (const w of client.workflow.list({ query })) return w.workflowId;
  return undefined;
}

/**
 * Send each candidate's events through the gate in this epoch, in order, one run at a time. An event a
 * run of this epoch already took is not sent (`already_replayed`); an event today's definitions refuse
 * is answered `invalid` with the gate's reason, and nothing is sent for it.
 */
export async function replayRuns(client: Client, gate: Gate, agent: string, runs: ReplayCandidate[], epoch: string): Promise<Record<string, ReplayedEvent[]>> {
  const out: Record<string, ReplayedEvent[]> = {};
  for (const run of runs) {
    const answers: ReplayedEvent[] = [];
    for (const e of run.events) {
      const base = { eventKey: e.eventKey, replayKey: e.replayKey };
      const earlier = await takenBy(client, agent, e.replayKey);
      if (earlier) {
        answers.push({ ...base, decision: 'already_replayed', workflowId: earlier });
        continue;
      }
      try {
        const answer = await gate.admitKeyed(gate.key(e.event, { agent, replay: { epoch, of: run.workflowId } }));
        const mine = answer.wakes.find((w) => w.agent === agent) ?? answer;
        answers.push({ ...base, decision: mine.decision, workflowId: mine.workflowId, ...(mine.message ? { message: mine.message } : {}) });
      } catch (err) {
        if (!(err instanceof GateInputError)) throw err;
        answers.push({ ...base, decision: 'invalid', message: err.message });
      }
    }
    out[run.workflowId] = answers;
  }
  return out;
}
