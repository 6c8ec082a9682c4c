import type { EffectOutcome, Proposal } from '../core/contracts';
import type { AbsorbedEvent, RunInput, TerminalReason } from '../core/run-types';
import { isoSeconds } from '../core/time';
import { deliveriesOf, keptDeliveryIds } from '../core/delivery-ids';
import { runEffectKey } from '../core/effect-slots';
import { parseEventKey } from '../gate/keys';
import type { Batch } from '../core/coalesce-types';
import type { CoalescePolicy } from '../core/policy';
import { effectsOf, runFacts, type RecordedEvent } from './history';
import type { RecordedRun } from './recorded';
import type { TrailRun } from './types';

/** The trip a hold's reason names (`trip #12: ...`), if it names one. */
export function tripIdOf(reason: string | undefined): number | undefined {
  const m = /trip #(\d+)/.exec(reason ?? '');
  return m ? Number(m[1]) : undefined;
}

/** A run's own input, whatever started it (a Schedule starts a one-call agent's window with a ScheduledRunInput). */
export function runInputOf(rec: RecordedRun): RunInput | undefined {
  const input = rec.input;
  return input && 'runKey' in input ? input : undefined;
}

/** The one event a run on the one-call path took, as the trail lists it. */
export interface RunEvent {
  eventKey: string;
  source: string;
  type: string;
  entity: string;
  occurredAt: string;
  version?: number;
  deliveryId?: string;
}

/**
 * The event of a one-call run: its input's, or for a window its Temporal Schedule started (whose
 * input names no event) the key the run recorded (result, status, or search attribute WakeEventKey),
 * the window's nominal time being its bucket.
 */
export function runEventOf(rec: RecordedRun): RunEvent | undefined {
  const input = runInputOf(rec);
  if (input) return input;
  const key = rec.result?.eventKey ?? rec.live?.eventKey ?? rec.indexed?.eventKey;
  const parts = key ? parseEventKey(key) : undefined;
  if (!key || !parts) return undefined;
  return { eventKey: key, source: parts.source, type: parts.type, entity: parts.entity, occurredAt: isoSeconds(parts.bucketStartMs) };
}

/** The events a run took: its result's list, else its live status's, else its input's (a coalesced run's batch). */
export function absorbedOf(rec: RecordedRun): AbsorbedEvent[] {
  const input = runInputOf(rec);
  const fromInput = input?.origin.kind === 'batch' ? input.origin.absorbed.map(({ payload: _p, ...e }) => e) : [];
  return rec.result?.absorbed ?? rec.live?.absorbed ?? fromInput;
}

/** The events a live run was told about and skipped: its result's or status's list, else the `skipped` signals in its history. */
export function skippedOf(rec: RecordedRun): AbsorbedEvent[] {
  if (rec.result?.skipped) return rec.result.skipped;
  if (rec.live?.skipped) return rec.live.skipped;
  return signalled(rec.history, 'skipped').flatMap((s) => ((s as { events?: AbsorbedEvent[] }).events ?? []).filter((e) => e?.eventKey));
}

/** Overlap `steer`: keys of the events a run took while live, from its result or status, else its `steer` updates' answers. */
export function steeredOf(rec: RecordedRun): string[] {
  if (rec.result?.steered) return rec.result.steered;
  if (rec.live?.steered) return rec.live.steered;
  // The coalescer names each steer update `steer:<first event key>`.
  const answers = rec.history.flatMap((e) => (e.kind === 'update-done' && e.id.startsWith('steer:') ? [e.result as { accepted?: unknown } | undefined] : []));
  return answers.flatMap((a) => (Array.isArray(a?.accepted) ? (a.accepted as string[]) : []));
}

function signalled(history: readonly RecordedEvent[], name: string): unknown[] {
  return history.flatMap((e) => (e.kind === 'signal' && e.name === name && e.input !== undefined ? [e.input] : []));
}

interface Output {
  staged?: Proposal[];
  committed?: EffectOutcome[];
  awaiting?: { effectKey?: string };
  takenBy?: { workflowId?: string };
}

/** The recorded run a replay runs again, and its epoch. */
function replayOf(input: RunInput | undefined): { epoch: string; of: string } | undefined {
  return input?.replay ? { epoch: input.replay.epoch, of: input.replay.of } : undefined;
}

/** One run as the trail shows it: what it took, what it spent, what it committed, how it ended. */
export function trailRun(rec: RecordedRun): TrailRun {
  const input = runInputOf(rec);
  const result = rec.result;
  const live = rec.live;
  const facts = runFacts(rec.history);
  const output = (result?.output ?? {}) as Output;
  const open = rec.status === 'RUNNING';
  const terminalReason: TerminalReason | undefined = result?.terminalReason ?? (rec.status === 'FAILED' || rec.status === 'TERMINATED' ? 'failed' : undefined);
  const held = result?.held ?? live?.held;
  const tripId = tripIdOf(held?.reason);
  const absorbed = absorbedOf(rec).map((e) => e.eventKey);
  const single = input?.origin.kind === 'batch' ? undefined : runEventOf(rec);
  const oneEvent = single ? [single.eventKey] : [];
  const deliveryIds = result?.deliveryIds ?? live?.deliveryIds ?? rec.indexed?.deliveryIds ?? (input?.deliveryId ? [input.deliveryId] : []);
  const deliveryCount = result?.deliveryCount ?? live?.deliveryCount;
  const overflow = result?.absorbedOverflow ?? (input?.origin.kind === 'batch' ? input.origin.absorbedOverflow : undefined);
  return {
    runKey: rec.workflowId,
    ...(rec.runId ? { runId: rec.runId } : {}),
    status: rec.status,
    startedAt: rec.startedAt,
    ...(rec.closedAt ? { closedAt: rec.closedAt } : {}),
    ...(terminalReason ? { terminalReason } : {}),
    ...(result?.summary ? { summary: result.summary } : {}),
    ...(open && live?.phase ? { phase: live.phase } : {}),
    absorbed: absorbed.length ? absorbed : oneEvent,
    ...(overflow ? { absorbedOverflow: overflow } : {}),
    skipped: skippedOf(rec).map((e) => e.eventKey),
    ...(steeredOf(rec).length ? { steered: steeredOf(rec) } : {}),
    deliveryIds,
    ...(deliveryCount !== undefined && deliveryCount > deliveryIds.length ? { deliveryCount } : {}),
    modelTurns: facts.modelTurns,
    toolCalls: facts.toolCalls,
    subagents: facts.subagents,
    ...(result?.usage ? { usage: result.usage } : live?.usage ? { usage: live.usage } : {}),
    ...(facts.policy?.budget ? { budget: facts.policy.budget } : {}),
    ...(facts.policy?.version ? { version: facts.policy.version } : input?.agentVersion ? { version: input.agentVersion } : {}),
    ...(held ? { held: { ...held, ...(tripId !== undefined ? { tripId } : {}) } } : {}),
    ...(result?.killedBy ? { killedBy: { who: result.killedBy.who, reason: result.killedBy.reason } } : {}),
    ...(input?.origin.kind === 'batch' && input.origin.supersedes ? { supersedes: input.origin.supersedes } : {}),
    ...(result?.supersededBy ? { supersededBy: result.supersededBy } : {}),
    ...(terminalReason === 'duplicate' && output.takenBy?.workflowId ? { takenBy: output.takenBy.workflowId } : {}),
    ...(replayOf(input) ? { replay: replayOf(input) } : {}),
    effects: effectsOf(facts, {
      runKey: rec.workflowId,
      // A replay's effects take the keys the run it replays gave them (src/core/ids.ts runEffectKey).
      ...(input?.replay ? { keyOf: (staged: Proposal[], step: number) => runEffectKey(input, staged, step) } : {}),
      open,
      ...(Array.isArray(output.staged) ? { staged: output.staged } : {}),
      ...(Array.isArray(output.committed) ? { committed: output.committed } : {}),
      ...(live?.awaitingApproval ? { awaiting: live.awaitingApproval } : {}),
      ...(terminalReason === 'escalated' && output.awaiting?.effectKey ? { timedOut: output.awaiting.effectKey } : {}),
    }),
  };
}

/** A batch its coalescer has not started yet: drawn as a pending run, from its opening to when its debounce lets it start. */
export function pendingRun(batch: Batch, policy: CoalescePolicy | undefined): TrailRun {
  const due = policy ? Math.min(batch.lastAtMs + policy.debouncePeriodMs, batch.openedAtMs + policy.maxWaitMs) : undefined;
  const deliveryIds = keptDeliveryIds(batch.events);
  const counted = batch.events.reduce((n, e) => n + deliveriesOf(e), 0);
  return {
    runKey: batch.runKey,
    status: 'PENDING',
    startedAt: new Date(batch.openedAtMs).toISOString(),
    ...(due !== undefined ? { closedAt: new Date(due).toISOString() } : {}),
    absorbed: batch.events.map((e) => e.eventKey),
    ...(batch.overflow ? { absorbedOverflow: batch.overflow } : {}),
    skipped: [],
    deliveryIds,
    ...(counted > deliveryIds.length ? { deliveryCount: counted } : {}),
    modelTurns: 0,
    toolCalls: 0,
    subagents: 0,
    ...(batch.supersedes ? { supersedes: batch.supersedes } : {}),
    effects: [],
  };
}
