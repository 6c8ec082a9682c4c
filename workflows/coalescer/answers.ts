import type { Batch, CoalescerState, Offer, OfferAnswer, OfferDecision } from '../../src/core/coalesce-types';
import { batchRunKey, coalescerId } from '../../src/core/ids';
import { pendingBatchAnswer, type CoalescerIdentity, type OfferedEvent } from '../../src/core/coalesce-batch';
import { SeenTable, type SeenEntry } from './seen';

/** Answers kept for retried offers (by offer id) that cross a continue-as-new. */
const RECENT_ANSWERS = 500;

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

  /** A redelivery of an event still waiting in the pending batch: keep its delivery ids with the event. */
  redelivered(eventKey: string, deliveryIds: string[]): void {
    const e = this.state.pending?.events.find((x) => x.eventKey === eventKey);
    if (e) e.deliveryIds.push(...deliveryIds.filter((d) => !e.deliveryIds.includes(d)));
  }

  /** The answer for an event already held by the pending batch or the live run, if it is. */
  protected heldAnswer(e: OfferedEvent): OfferAnswer | undefined {
    const { pending, running } = this.state;
    for (const [batch, runState] of [
      [pending, 'pending'],
      [running, 'running'],
    ] as const) {
      const held = batch?.events.find((x) => x.eventKey === e.eventKey);
      if (!batch || !held) continue;
      const taken = { coalescerId: this.coalescerId, runKey: batch.runKey, runState };
      if (held.fingerprint !== e.fingerprint) return { decision: 'mismatch', ...taken };
      // A redelivery: its delivery ids go with the event, into the run's record.
      for (const id of e.deliveryIds ?? []) if (!held.deliveryIds.includes(id)) held.deliveryIds.push(id);
      // Its first decision (a steered event its run never saw may be held by the follow-up run now).
      const first = this.seen.get(e.eventKey)?.decision;
      if (first) return { decision: first, duplicate: true, ...taken };
      if (runState === 'running' && running?.steered?.includes(e.eventKey)) return { decision: 'steered', duplicate: true, ...taken };
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

  /** The answer a retried first offer gets: its decision and run as first decided, with where that run stands now. */
  protected firstAnswer(row: SeenEntry, nowMs: number): OfferAnswer {
    const { duplicate: _d, ...answer } = this.seenAnswer(row, undefined);
    const { pending, running } = this.state;
    if (pending && pending.runKey === answer.runKey)
      return this.pendingAnswer(pending, answer.decision === 'started' ? 'started' : 'coalesced', nowMs, answer.decision);
    if (running && running.runKey === answer.runKey) return { ...answer, runState: 'running' };
    return answer;
  }

  protected remember(offer: Offer, answer: OfferAnswer): OfferAnswer {
    if (!offer.offerId) return answer;
    const { recent } = this.state;
    recent.push({ eventKey: offer.event.eventKey, offerId: offer.offerId, answer });
    if (recent.length > RECENT_ANSWERS) recent.splice(0, recent.length - RECENT_ANSWERS);
    return answer;
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
