import type { Batch, SeenRow } from '../../src/core/coalesce-types';
import { batchRunKey, batchRunToken } from '../../src/core/ids';
import { CoalescerAnswers } from './answers';

/**
 * What the coalescer machine (machine.ts) does after a person's hand: forget a re-armed run's
 * events, re-key a batch whose run ID was taken (a coalescer reset by hand), take in the dedup table
 * a chain terminated by hand left. Pure, over the machine's state.
 */
export abstract class CoalescerByHand extends CoalescerAnswers {
  /**
   * Forget the events a closed run took (a person re-armed it), so their next deliveries are decided
   * afresh. Not the live run's or the pending batch's: returns the event keys forgotten.
   */
  forgetRun(runKey: string): string[] {
    const { pending, running } = this.state;
    if (pending?.runKey === runKey || running?.runKey === runKey) return [];
    const token = this.tokenOf(runKey);
    const keys = this.seen.keysOfRun(token);
    for (const key of keys) this.seen.forget(key);
    this.state.recent = this.state.recent.filter((r) => !keys.includes(r.eventKey));
    return keys;
  }

  /**
   * The live run's ID was taken at its start (only a coalescer reset by hand can meet one): the batch
   * gets the chain's next number, and its events' entries name it. Returns the batch to start again.
   */
  rekey(runKey: string): Batch | undefined {
    const { state } = this;
    const running = state.running;
    if (running?.runKey !== runKey) return undefined;
    const opener = this.tokenOf(runKey).replace(/~[^~]*$/, '');
    const n = (state.batches = (state.batches ?? 0) + 1);
    const next = batchRunKey(this.self.agent, this.self.wakeKey, batchRunToken(opener, state.chain ?? '0', n));
    running.runKey = next;
    const summary = state.runs.find((r) => r.runKey === runKey);
    if (summary) summary.runKey = next;
    for (const e of running.events) this.seen.retake(e.eventKey, this.tokenOf(next));
    return {
      runKey: next,
      openedBy: opener,
      openedAtMs: running.startedAtMs,
      lastAtMs: running.startedAtMs,
      events: running.events,
      overflow: running.overflow,
    };
  }

  /** A chain terminated by hand left its dedup table: taken in before this chain's own (seen.ts `adopt`). */
  adopt(left: { seen: readonly SeenRow[]; seenOpeners?: Record<string, string>; newestVersion?: Record<string, number>; except?: string[] }): number {
    for (const [source, v] of Object.entries(left.newestVersion ?? {})) this.state.newestVersion[source] = Math.max(this.state.newestVersion[source] ?? v, v);
    return this.seen.adopt(left.seen, left.seenOpeners, left.except);
  }
}
