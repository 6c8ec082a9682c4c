import type { Client } from '@temporalio/client';
import type { WakeEventInput } from '../core/event';
import type { CommitInput } from '../core/contracts';
import type { ReplayOf, RunInput, RunResult, TerminalReason } from '../core/run-types';
import type { Gate } from '../gate/gate';
import { GateInputError } from '../gate/errors';
import { FailureType } from '../core/failures';
import { effectKey, replayRunKey } from '../core/ids';
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
  /** The effects it began, then those each earlier replay of it began (oldest first). */
  effects: EffectBegun[][];
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

/** One effect a run began (a `commitEffect` activity): its name, its key, and whether the provider refused it outright. */
export interface EffectBegun {
  effect: string;
  effectKey: string;
  rejected: boolean;
}

/** The effects a run began (its `commitEffect` activities), in order, once each; `rejected` when the provider refused it (ProviderRejected). */
export function effectsBegun(history: readonly RecordedEvent[]): EffectBegun[] {
  const byId = new Map<string, EffectBegun>();
  const out = new Map<string, EffectBegun>();
  for (const e of history) {
    if (e.kind === 'activity' && e.activityType === 'commitEffect' && e.input) {
      const c = e.input as CommitInput;
      const begun = out.get(c.effectKey) ?? { effect: c.effect.name, effectKey: c.effectKey, rejected: false };
      out.set(c.effectKey, begun);
      byId.set(e.id, begun);
    } else if (e.kind === 'activity-failed') {
      const begun = byId.get(e.scheduledId);
      if (begun) begun.rejected = e.type === FailureType.ProviderRejected;
    } else if (e.kind === 'activity-done') {
      const begun = byId.get(e.scheduledId);
      if (begun) begun.rejected = false;
    }
  }
  return [...out.values()];
}

/**
 * The key each effect of a replay takes, by its slot (the n-th effect of its name): from the recorded
 * run and then each earlier replay of it, oldest first, the last key a run began for that slot, so a
 * replay finds what any earlier run landed. A slot whose last key the provider refused outright gets
 * a key of this epoch's own (`<run>/replay/<epoch>#effect@n<nth>`): under the refused key, a provider
 * that remembers keys would refuse the fixed request too. A slot no run began is left out: the replay
 * gives it `<run>/replay#effect@n<nth>` (src/core/ids.ts `runEffectKey`).
 */
export function effectSlots(runs: readonly EffectBegun[][], replayRunKey: string, epoch: string): ReplayOf['effects'] {
  const slots = new Map<string, EffectBegun[]>();
  for (const begun of runs) {
    const nth = new Map<string, number>();
    for (const b of begun) {
      const n = nth.get(b.effect) ?? 0;
      nth.set(b.effect, n + 1);
      const slot = slots.get(b.effect) ?? [];
      slot[n] = b;
      slots.set(b.effect, slot);
    }
  }
  return [...slots].flatMap(([effect, slot]) =>
    [...slot].map((b, n) => ({ effect, effectKey: !b || b.rejected ? effectKey(`${replayRunKey}/${epoch}`, effect, `n${n}`) : b.effectKey })),
  );
}

/** The effects each earlier replay of a run began, oldest first (every epoch's replay has the run's replay ID). */
async function earlierReplays(client: Client, replayId: string): Promise<EffectBegun[][]> {
  const found: { start: number; runId: string }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = ${quote(replayId)} AND ExecutionStatus != "Running"` }))
    found.push({ start: w.startTime.getTime(), runId: w.runId });
  found.sort((a, b) => a.start - b.start);
  const out: EffectBegun[][] = [];
  for (const f of found) out.push(effectsBegun(await recordedHistory(client, await client.workflow.getHandle(replayId, f.runId).fetchHistory())));
  return out;
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
      effects: [effectsBegun(history), ...(await earlierReplays(client, replayRunKey(w.workflowId)))],
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
      const effects = effectSlots(run.effects, replayRunKey(run.workflowId), epoch);
      input = replayInput({ of: run.workflowId, epoch, agent, effects, keyed: run.events.map((e) => gate.key(e, { agent })) });
    } catch (err) {
      if (!(err instanceof GateInputError)) throw err;
      out.push({ ...base, decision: 'invalid', message: err.message });
      continue;
    }
    out.push({ ...base, ...(await gate.admitReplay(input)) });
  }
  return out;
}
