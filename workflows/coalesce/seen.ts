import type { OfferDecision, SeenEvent } from '../../core/coalesce-types';

/** Fingerprint characters kept per event: 64 bits of sha256 tell inputs apart as well as the whole hash would here. */
export const FINGERPRINT_CHARS = 16;
/**
 * What the table may take in a continue-as-new input, estimated as JSON characters. Temporal refuses
 * a payload over 2 MB (and warns from 512 KB); the coalescer's input carries the pending batch too.
 */
export const SEEN_BUDGET_CHARS = 1_000_000;
/** JSON characters of one entry besides its keys: brackets, quotes, commas, the fingerprint, time and decision. */
const ENTRY_OVERHEAD = 48;

const size = (e: SeenEvent) => ENTRY_OVERHEAD + e[0].length + (e[4]?.length ?? 0);

/**
 * The coalescer's dedup of events by key: each event it decided, with its fingerprint prefix, when,
 * how and which run took it, for `horizonMs` (the agent's `dedupHorizon`). This is what Temporal's
 * workflow ID policy gives the one-call path, held here because a coalesced event has no workflow of
 * its own. The entries live in the coalescer's state (`rows`, oldest first), so they survive
 * continue-as-new; the coalescer does not close while one is younger than the horizon.
 *
 * Bounded twice: by age (entries past the horizon are dropped) and by size ({@link SEEN_BUDGET_CHARS},
 * so the continue-as-new input stays far under Temporal's payload limit). Past the size bound the
 * oldest entries go early and `floorMs` records the newest of them: the trail and the docs state it.
 * At about 60 characters an entry, that is some 16,000 events per wake key within the horizon.
 */
export class SeenTable {
  private readonly byKey = new Map<string, SeenEvent>();
  private chars = 0;

  constructor(
    readonly rows: SeenEvent[],
    private readonly horizonMs: number,
    private readonly onFloor: (floorMs: number) => void,
  ) {
    for (const row of rows) {
      this.byKey.set(row[0], row);
      this.chars += size(row);
    }
  }

  get(eventKey: string): SeenEvent | undefined {
    return this.byKey.get(eventKey);
  }

  /** Record a decided event (a key decided again, after re-arming, replaces its entry). */
  add(eventKey: string, fingerprint: string, atMs: number, decision: OfferDecision, openedBy?: string): void {
    if (this.byKey.has(eventKey)) this.forget(eventKey);
    const row: SeenEvent = [eventKey, fingerprint.slice(0, FINGERPRINT_CHARS), atMs, decision];
    if (openedBy !== undefined && openedBy !== eventKey) row.push(openedBy);
    this.rows.push(row);
    this.byKey.set(eventKey, row);
    this.chars += size(row);
    while (this.chars > SEEN_BUDGET_CHARS && this.rows.length > 1) {
      const dropped = this.rows.shift()!;
      this.drop(dropped);
      this.onFloor(dropped[2]);
    }
  }

  /** Whether `fingerprint` is the one recorded for this entry. */
  static sameInputs(row: SeenEvent, fingerprint: string): boolean {
    return row[1] === fingerprint.slice(0, FINGERPRINT_CHARS);
  }

  /** Forget one event (re-armed by a person): its next delivery is decided afresh. Returns whether it was here. */
  forget(eventKey: string): boolean {
    const row = this.byKey.get(eventKey);
    if (!row) return false;
    this.rows.splice(this.rows.indexOf(row), 1);
    this.drop(row);
    return true;
  }

  /** Drop entries past the horizon at `nowMs`. */
  prune(nowMs: number): void {
    while (this.rows.length && this.rows[0]![2] <= nowMs - this.horizonMs) this.drop(this.rows.shift()!);
  }

  /** When the newest entry passes the horizon (the coalescer may close then), or undefined when empty. */
  get expiresAtMs(): number | undefined {
    const newest = this.rows[this.rows.length - 1];
    return newest ? newest[2] + this.horizonMs : undefined;
  }

  get size(): number {
    return this.rows.length;
  }

  private drop(row: SeenEvent): void {
    if (this.byKey.get(row[0]) === row) this.byKey.delete(row[0]);
    this.chars -= size(row);
  }
}
