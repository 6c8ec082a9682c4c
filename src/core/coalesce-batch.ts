import type { Batch, KeptEvent, Offer, OfferAnswer, RunEnded } from './coalesce-types';
import { batchRunKey, batchRunToken, coalescerId } from './ids';
import type { CoalescePolicy } from './policy';
import { jsonBytes } from './bytes';

/*
 * A coalescer's batches, pure: who a coalescer is, how a batch opens and fills, when it is due, how
 * an event in it is answered, and the decision a new chain makes for the offer it was started with.
 * The gate answers a coalescer's start with that decision (src/coalescer/coalescer-start.ts); the
 * coalescer's machine (workflows/coalescer/machine.ts) opens, fills and answers its batches with
 * these same functions, so the two cannot drift apart.
 */

/** Who a coalescer is, and its policy: fixed for its whole life, continue-as-new included. */
export interface CoalescerIdentity {
  agent: string;
  wakeKey: string;
  policy: CoalescePolicy;
}

/** An event as offered, with its payload and fingerprint (a run's record of it drops them). */
export type OfferedEvent = Offer['event'];

/** When a pending batch may start: a quiet `debouncePeriodMs` after its last event, at the latest `maxWaitMs` after its first, epoch ms. */
export function dueAt(b: Batch, policy: CoalescePolicy): number {
  return Math.min(b.lastAtMs + policy.debouncePeriodMs, b.openedAtMs + policy.maxWaitMs);
}

/**
 * UTF-8 bytes of JSON of the events (with their payloads) one batch, and so one run, holds in full;
 * past it they are counted, like past `maxEventsPerRun`, and the newest is always kept. It is the
 * events' share of the coalescer's continue-as-new input (workflows/coalescer/carry.ts
 * CARRIED_BUDGET_BYTES: the seen table, the pending batch and the answers kept, under the SDK's
 * 512 KiB payload warning together), so a run's input stays far under it too. At 300,000 a hot
 * key's pending batch was 239,000 characters of an 843,836-byte input, beside its seen table.
 */
export const BATCH_BUDGET_CHARS = 60_000;
/** UTF-8 bytes of an event's JSON (what it takes in a payload). */
export const eventChars = (e: OfferedEvent | KeptEvent): number => jsonBytes(e);
/** The JSON bytes of a batch's (or a live run's) events, counted once and kept up to date after. */
export const charsOf = (holder: { events: (OfferedEvent | KeptEvent)[]; chars?: number }): number =>
  (holder.chars ??= holder.events.reduce((n, e) => n + eventChars(e), 0));
/** Whether a live run's event is whole (with its payload), not kept by its key alone past a continue-as-new. */
export const whole = (e: OfferedEvent | KeptEvent): e is OfferedEvent => 'payload' in e;

/**
 * Whether a run superseded by a restart had run its events, by its end: it had begun committing and
 * refused its supersede, or it ended otherwise than cancelled before the supersede reached it. An end
 * known only from Temporal (terminated, deleted: no `seen`) says nothing: the restart runs them.
 */
export const ranItsEvents = ({ commitBegan, seen, terminalReason }: Pick<RunEnded, 'commitBegan' | 'seen' | 'terminalReason'>): boolean =>
  Boolean(commitBegan) || (seen !== undefined && terminalReason !== 'cancelled');
/**
 * Add the newest event to a batch within `maxEvents` and BATCH_BUDGET_CHARS: when full, the events
 * before it are counted in `overflow` from the last back (the first, the opener, goes last), and the
 * newest always goes in (the run works on the newest state; one event is at most the gate's payload
 * limit, 256 KB).
 */
export function fitInto(batch: Batch, e: OfferedEvent, maxEvents: number): void {
  const size = eventChars(e);
  let chars = charsOf(batch);
  while (batch.events.length > 0 && (batch.events.length >= maxEvents || chars + size > BATCH_BUDGET_CHARS)) {
    chars -= eventChars(batch.events.pop()!);
    batch.overflow += 1;
  }
  batch.events.push(e);
  batch.chars = chars + size;
}

/** Whether a batch (or a live run) can take one more event in full, within `maxEvents` and BATCH_BUDGET_CHARS. */
export const hasRoom = (holder: { events: (OfferedEvent | KeptEvent)[]; chars?: number }, e: OfferedEvent, maxEvents: number): boolean =>
  holder.events.length < maxEvents && charsOf(holder) + eventChars(e) <= BATCH_BUDGET_CHARS;

/**
 * The batch event `e` opens: the `n`-th of the coalescer's chain `chain`, its run named after `e`
 * (`batchRunToken`). A batch that restarts a live run (overlap `cancel`) carries that run's events
 * and names it in `supersedes`.
 */
export function openBatch(
  self: CoalescerIdentity,
  e: OfferedEvent,
  nowMs: number,
  chain: string,
  n: number,
  carried?: { runKey: string; events: OfferedEvent[]; overflow: number },
): Batch {
  const batch: Batch = {
    runKey: batchRunKey(self.agent, self.wakeKey, batchRunToken(e.eventKey, chain, n)),
    openedBy: e.eventKey,
    openedAtMs: nowMs,
    lastAtMs: nowMs,
    events: [...(carried?.events ?? [])],
    overflow: carried?.overflow ?? 0,
    ...(carried ? { supersedes: carried.runKey } : {}),
  };
  fitInto(batch, e, self.policy.maxEventsPerRun);
  return batch;
}

/** The answer for an event in the pending batch `b`: its run, pending, and when it starts (at once after the live run, when one is live). */
export function pendingBatchAnswer(
  coalescer: string,
  b: Batch,
  policy: CoalescePolicy,
  nowMs: number,
  decision: OfferAnswer['decision'],
  runLive = false,
): OfferAnswer {
  return {
    decision,
    coalescerId: coalescer,
    runKey: b.runKey,
    runState: 'pending',
    startsInMs: runLive ? 0 : Math.max(0, dueAt(b, policy) - nowMs),
  };
}

/**
 * What a new chain decides for the offer it was started with (input `first`, before any message):
 * with nothing seen, nothing pending and no live run, the event opens the chain's first batch and is
 * `started`. The gate answers the start with it; the model-based test holds it to the machine's own
 * decision (test/unit/coalesce-model.test.ts).
 */
export function decideFirst(self: CoalescerIdentity, offer: Offer, chain: string, nowMs = 0): OfferAnswer {
  const batch = openBatch(self, offer.event, nowMs, chain, 1);
  return pendingBatchAnswer(coalescerId(self.agent, self.wakeKey), batch, self.policy, nowMs, 'started');
}
