import type { AbsorbedEvent } from '../../src/core/run-types';
import type { OfferedEvent } from '../../src/core/coalesce-batch';
import { jsonBytes } from '../../src/core/bytes';
import { record } from './batch';

/**
 * JSON bytes (UTF-8) of payloads the records of skips carry to one run, at most, over all of them: under
 * a storm the run's history grows by its skip records, so past this an event goes without its payload
 * (and a replay of the run lists it as not replayable).
 */
export const SKIPPED_PAYLOAD_CHARS = 1_000_000;
/** JSON bytes of payloads one record (one signal) carries at most, under the SDK's 512 KiB payload warning with the records beside them. */
export const SKIPPED_SIGNAL_PAYLOAD_CHARS = 300_000;

/**
 * The record of skipped events the run takes: each as a run's record keeps an event, with its payload
 * while they fit in `budget` characters, so that a replay of a run that failed runs the events
 * skipped on it too (src/shadow/replay.ts). The run keeps no payload of them (workflows/run/record.ts).
 * Returns the characters of payload it carries.
 */
export function skippedRecord(events: readonly OfferedEvent[], budget: number): { events: AbsorbedEvent[]; chars: number } {
  let chars = 0;
  const out = events.map((e) => {
    const size = jsonBytes(e.payload ?? {});
    const keep = chars + size <= budget;
    if (keep) chars += size;
    return keep ? { ...record(e), payload: e.payload } : record(e);
  });
  return { events: out, chars };
}

/**
 * A `skip` stands only once Temporal shows its run was open after the decision: the record of the
 * skip (a signal) was delivered to that run. A closed run refuses the signal (a run terminated by
 * hand sends its coalescer no end, so the coalescer may still take it for live), and then the
 * skipped events are the next run's, as if they had come after the end (machine.ts `skipsRecorded`).
 * Until then the offer's answer waits (workflow.ts), so no one is told `skipped` for a dead run.
 *
 * At most one record is in flight (the shell awaits it), and a new one goes at most once a
 * SKIPPED_SIGNAL_EVERY_MS, carrying every skip since the last: under a storm the answers wait a
 * fraction of a second, and the run's history takes a few signals a second, not two events per offer.
 * Not part of the machine's state: every skip is settled before a continue-as-new, and replay
 * rebuilds the ledger from the calls in the coalescer's history.
 */
/** A skip: its event, and the id of the offer it answers (so a skip refused is decided again as that offer). */
export interface Skip {
  event: OfferedEvent;
  offerId?: string;
}

export class SkipLedger {
  private owed: ({ runKey: string } & Skip)[] = [];
  private sent?: { runKey: string; skips: Skip[] };
  private sentAtMs = -Infinity;

  constructor(private readonly everyMs: number) {}

  /** The event was answered `skipped` for the live run `runKey`, for the offer `offerId`. */
  add(runKey: string, event: OfferedEvent, offerId?: string): void {
    this.owed.push({ runKey, event, ...(offerId ? { offerId } : {}) });
  }

  /** Whether a skip of `eventKey` waits for its run to take its record. */
  open(eventKey: string): boolean {
    return this.owed.some((o) => o.event.eventKey === eventKey) || (this.sent?.skips.some((k) => k.event.eventKey === eventKey) ?? false);
  }

  /** The skips that do not stand yet (owed, or their record in flight), with their offers' ids, in the order decided. */
  openSkips(): Skip[] {
    return [...(this.sent?.skips ?? []), ...this.owed].map(({ event, offerId }) => ({ event, ...(offerId ? { offerId } : {}) }));
  }

  /** Nothing owed and nothing in flight. */
  get settled(): boolean {
    return !this.owed.length && !this.sent;
  }

  /**
   * The record due at `nowMs` (the first run's owed skips, in the order decided), or when one falls due.
   * `now` sends at once (a continue-as-new is suggested: every skip goes before it).
   */
  next(nowMs: number, now: boolean): { runKey: string; events: OfferedEvent[] } | { dueMs: number } | undefined {
    if (!this.owed.length || this.sent) return undefined;
    const dueMs = this.sentAtMs + this.everyMs;
    if (nowMs < dueMs && !now) return { dueMs };
    const runKey = this.owed[0]!.runKey;
    const skips = this.owed.filter((o) => o.runKey === runKey).map(({ event, offerId }) => ({ event, ...(offerId ? { offerId } : {}) }));
    this.owed = this.owed.filter((o) => o.runKey !== runKey);
    this.sentAtMs = nowMs;
    this.sent = { runKey, skips };
    return { runKey, events: skips.map((k) => k.event) };
  }

  /**
   * The record sent to `runKey` was delivered (the skips stand) or refused (that run had closed).
   * Returns the skips that do not stand: the refused ones, and any still owed to that run, in order.
   */
  recorded(runKey: string, delivered: boolean): Skip[] {
    const sent = this.sent?.runKey === runKey ? this.sent.skips : [];
    if (this.sent?.runKey === runKey) this.sent = undefined;
    if (delivered) return [];
    const later = this.owed.filter((o) => o.runKey === runKey).map(({ event, offerId }) => ({ event, ...(offerId ? { offerId } : {}) }));
    this.owed = this.owed.filter((o) => o.runKey !== runKey);
    return [...sent, ...later];
  }
}
