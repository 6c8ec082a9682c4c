import type { Batch, CoalescerState, FirstAnswer, Offer, OfferAnswer, OfferDecision } from '../../src/core/coalesce-types';
import { batchRunKey, coalescerId } from '../../src/core/ids';
import { pendingBatchAnswer, type CoalescerIdentity, type OfferedEvent } from '../../src/core/coalesce-batch';
import { jsonBytes } from '../../src/core/bytes';
import { addDeliveries } from '../../src/core/delivery-ids';
import { hash64 } from '../../src/core/hash';
import { RECENT_ANSWER_BYTES, RECENT_ANSWERS } from '../../src/core/coalesce-carried';
import { OFFER_ID_CHARS, SeenTable, type SeenEntry } from './seen';

/**
 * Answers kept for retried offers that cross a continue-as-new (src/core/coalesce-carried.ts): at most
 * RECENT_ANSWERS first decisions' (a few facts each, FIRST_ANSWER_BYTES), and answers kept whole within
 * RECENT_ANSWERS and RECENT_ANSWER_BYTES: past them the oldest go, and a retry of such an offer is
 * answered again from the seen table (the same decision and run, where the run stands now).
 */
export { FIRST_ANSWER_BYTES, RECENT_ANSWER_BYTES, RECENT_ANSWERS } from '../../src/core/coalesce-carried';

const DECISION_CODES: Partial<Record<OfferDecision, string>> = { started: 's', coalesced: 'c', skipped: 'k', steered: 't' };
const CODE_DECISIONS = Object.fromEntries(Object.entries(DECISION_CODES).map(([d, c]) => [c, d])) as Record<string, OfferDecision>;

const HEX_PREFIX = new RegExp(`^[0-9a-f]{${OFFER_ID_CHARS}}`);

/**
 * Which offer a kept first answer is for: the first OFFER_ID_CHARS characters of an offer id led by
 * hex (a UUID, a recovery's: activities/coalescer/recover.ts `recoveredOfferId`), as its seen entry
 * keeps them, or for any other id `#` and 32 bits of the whole id's hash: ids that share their first
 * characters (as the recovery's once did) would otherwise have every retry answered from the newest one's.
 */
export function firstAnswerSlot(offerId: string): string {
  if (HEX_PREFIX.test(offerId)) return offerId.slice(0, OFFER_ID_CHARS);
  return `#${hash64(offerId)[1].toString(16).padStart(8, '0')}`;
}

/** A first decision's answer as `firstAnswers` keeps it: its offer's slot, `|`, then the decision's code, `p`, `r` or `-` (runState), startsInMs in base 36. */
function firstAnswerOf(slot: string, answer: OfferAnswer): FirstAnswer {
  const state = answer.runState === 'pending' ? 'p' : answer.runState === 'running' ? 'r' : '-';
  const starts = answer.runState && answer.startsInMs !== undefined ? answer.startsInMs.toString(36) : '';
  return `${slot}|${DECISION_CODES[answer.decision]}${state}${starts}`;
}

/** Kept for a slot two offers' first answers share: neither can be told apart, a retry of either reads where its run stands now. */
const AMBIGUOUS = '?';

/** What a kept first answer says: its offer's slot, decision (none for an ambiguous slot), and the runState and startsInMs it had. */
function readFirstAnswer(kept: FirstAnswer): { slot: string; decision?: OfferDecision; runState?: 'pending' | 'running'; startsInMs?: number } {
  const cut = kept.lastIndexOf('|');
  const [code, state] = [kept[cut + 1]!, kept[cut + 2]];
  const starts = kept.slice(cut + 3);
  const runState = state === 'p' ? 'pending' : state === 'r' ? 'running' : undefined;
  return {
    slot: kept.slice(0, cut),
    ...(CODE_DECISIONS[code] ? { decision: CODE_DECISIONS[code] } : {}),
    ...(runState ? { runState } : {}),
    ...(starts ? { startsInMs: parseInt(starts, 36) } : {}),
  };
}

/**
 * How the coalescer machine (machine.ts) answers for an event it has decided before: a retry of the
 * very offer, an event held by the pending batch or the live run, one its dedup table holds, the
 * `event` query's look-up, a redelivery's delivery ids. Pure, over the machine's state.
 */
export abstract class CoalescerAnswers {
  readonly coalescerId: string;
  /** The dedup of events by key, over `state.seen`. */
  abstract readonly seen: SeenTable;

  constructor(
    readonly self: CoalescerIdentity,
    readonly state: CoalescerState,
  ) {
    this.coalescerId = coalescerId(self.agent, self.wakeKey);
  }

  /** What the coalescer knows of one event key: its decision, or undefined when it has none within the horizon. */
  lookup(eventKey: string): (OfferAnswer & { decidedAtMs: number }) | undefined {
    const row = this.seen.get(eventKey);
    if (!row) return undefined;
    const { duplicate: _d, ...answer } = this.seenAnswer(row, undefined);
    const { pending, running } = this.state;
    const runState = pending?.runKey === answer.runKey ? 'pending' : running?.runKey === answer.runKey ? 'running' : undefined;
    return { ...answer, ...(runState ? { runState } : {}), decidedAtMs: row.atMs };
  }

  /** A redelivery of an event still waiting in the pending batch: its delivery ids go with the event, the first few and the newest, all counted. */
  redelivered(eventKey: string, deliveryIds: string[]): void {
    const e = this.state.pending?.events.find((x) => x.eventKey === eventKey);
    if (e) addDeliveries(e, deliveryIds);
  }

  /**
   * The answer for an event already held by the pending batch, the live run or a foreign run (a live
   * run of a chain terminated by hand, adopted while this chain had its own: live too), if it is.
   */
  protected heldAnswer(e: OfferedEvent): OfferAnswer | undefined {
    const { pending, running, foreign } = this.state;
    const holders = [[pending, 'pending'] as const, ...[running, ...(foreign ?? [])].map((run) => [run, 'running'] as const)];
    for (const [batch, runState] of holders) {
      const held = batch?.events.find((x) => x.eventKey === e.eventKey);
      if (!batch || !held) continue;
      const taken = { coalescerId: this.coalescerId, runKey: batch.runKey, runState };
      if (held.fingerprint !== e.fingerprint) return { decision: 'mismatch', ...taken };
      // A redelivery: its delivery ids go with the event while its batch waits, into the run's record
      // (within their bound, counted). A started run's events are never read for them again: the
      // coalescer's copy does not grow past the batch budget measured at the start (carry.ts `keptOf`).
      if (runState === 'pending') addDeliveries(held, e.deliveryIds ?? []);
      // Its first decision (a steered event its run never saw may be held by the follow-up run now).
      const first = this.seen.get(e.eventKey)?.decision;
      if (first) return { decision: first, duplicate: true, ...taken };
      if ('steered' in batch && batch.steered?.includes(e.eventKey)) return { decision: 'steered', duplicate: true, ...taken };
      const opened = 'openedBy' in batch ? batch.openedBy === e.eventKey : batch.events[0]?.eventKey === e.eventKey;
      return { decision: opened ? 'started' : 'coalesced', duplicate: true, ...taken };
    }
    return undefined;
  }

  /** The answer for an event decided before (the seen table's entry): the same decision and run, or `mismatch` on other inputs. */
  protected seenAnswer(row: SeenEntry, fingerprint: string | undefined): OfferAnswer {
    const { decision, runToken: token } = row;
    const runKey = decision === 'stale' || !token ? undefined : batchRunKey(this.self.agent, this.self.wakeKey, token);
    const base = { coalescerId: this.coalescerId, ...(runKey ? { runKey } : {}) };
    if (fingerprint !== undefined && !SeenTable.sameInputs(row, fingerprint)) return { decision: 'mismatch', ...base };
    return { decision, duplicate: true, ...base };
  }

  /** The run token of a run of this coalescer (what follows `@` in its run key). */
  protected tokenOf(runKey: string): string {
    return runKey.slice(batchRunKey(this.self.agent, this.self.wakeKey, '').length);
  }

  /**
   * The answer a retried first offer gets: its decision and run as first decided, with what its
   * answer said of the run then (`firstAnswers`), or past those kept (or when another offer's first
   * answer shared its slot), where that run stands now.
   */
  protected firstAnswer(row: SeenEntry, offerId: string, nowMs: number): OfferAnswer {
    const { duplicate: _d, ...answer } = this.seenAnswer(row, undefined);
    const { pending, running } = this.state;
    // A steered event its run refused (or never gave its model) waits in the follow-up batch now: the
    // run its first answer said was running is not the one that holds it.
    if (row.decision === 'steered' && pending && pending.runKey === answer.runKey) return this.pendingAnswer(pending, 'coalesced', nowMs, 'steered');
    const slot = firstAnswerSlot(offerId);
    const firsts = this.state.firstAnswers ?? [];
    for (let i = firsts.length - 1; i >= 0; i--) {
      const kept = readFirstAnswer(firsts[i]!);
      if (kept.slot !== slot) continue;
      if (!kept.decision) break; // two offers' first answers shared this slot: where the run stands now
      if (kept.decision !== row.decision) continue;
      const { runState, startsInMs } = kept;
      return { ...answer, ...(runState ? { runState } : {}), ...(startsInMs !== undefined ? { startsInMs } : {}) };
    }
    if (pending && pending.runKey === answer.runKey)
      return this.pendingAnswer(pending, answer.decision === 'started' ? 'started' : 'coalesced', nowMs, answer.decision);
    if (running && running.runKey === answer.runKey) return { ...answer, runState: 'running' };
    return answer;
  }

  /** The answer remembered whole for this very offer (a retry of it), if it is still kept. */
  protected recentAnswer(offer: Offer): OfferAnswer | undefined {
    if (!offer.offerId) return undefined;
    const kept = this.state.recent.find((r) => r.eventKey === offer.event.eventKey && r.offerId === offer.offerId);
    return kept && { ...kept.answer, coalescerId: this.coalescerId };
  }

  /**
   * Keep an answer for a retry of its offer. A first decision's seen entry holds its decision, run and
   * offer id: only the rest of its answer is kept (`firstAnswers`, at most FIRST_ANSWER_BYTES). Kept in
   * full, the hot key's 500 newest answers were 150,000 characters of its continue-as-new input. An
   * answer the entry cannot give again is kept whole (less the coalescer's ID) in `recent`, within
   * RECENT_ANSWER_BYTES: a redelivery's or a mismatch's (the entry is another offer's), a stale one's
   * (its newest version).
   */
  protected remember(offer: Offer, answer: OfferAnswer): OfferAnswer {
    if (!offer.offerId) return answer;
    if (!answer.duplicate && answer.decision !== 'mismatch' && answer.decision !== 'stale' && this.answersRetry(offer)) {
      const slot = firstAnswerSlot(offer.offerId);
      // Another offer's first answer holds this slot (32 bits): neither is kept, the slot is marked ambiguous.
      const shared = (this.state.firstAnswers ?? []).some((f) => readFirstAnswer(f).slot === slot);
      const firsts = (this.state.firstAnswers = (this.state.firstAnswers ?? []).filter((f) => !shared || readFirstAnswer(f).slot !== slot));
      firsts.push(shared ? `${slot}|${AMBIGUOUS}` : firstAnswerOf(slot, answer));
      if (firsts.length > RECENT_ANSWERS) firsts.splice(0, firsts.length - RECENT_ANSWERS);
      return answer;
    }
    const { recent } = this.state;
    const { coalescerId: _c, ...kept } = answer;
    recent.push({ eventKey: offer.event.eventKey, offerId: offer.offerId, answer: kept });
    let bytes = recent.reduce((n, r) => n + jsonBytes(r) + 1, 0);
    while (recent.length > RECENT_ANSWERS || (bytes > RECENT_ANSWER_BYTES && recent.length > 1)) bytes -= jsonBytes(recent.shift()) + 1;
    return answer;
  }

  /** Whether the seen table answers a retry of `offer` as its first decision (its entry names this offer, with its inputs). */
  protected answersRetry(offer: Offer): boolean {
    const row = this.seen.get(offer.event.eventKey);
    return row !== undefined && SeenTable.firstOffer(row, offer.offerId) && SeenTable.sameInputs(row, offer.event.fingerprint);
  }

  protected pendingAnswer(
    b: Batch,
    decision: Extract<OfferDecision, 'started' | 'coalesced'>,
    nowMs: number,
    as: OfferAnswer['decision'] = decision,
  ): OfferAnswer {
    return pendingBatchAnswer(this.coalescerId, b, this.self.policy, nowMs, as, this.state.running !== undefined);
  }
}
