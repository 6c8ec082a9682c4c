import type { OfferDecision, SeenEvent, SeenRow } from '../../src/core/coalesce-types';
import { seenRunToken } from '../../src/core/ids';
import {
  atOf,
  charsOf,
  COMPACT_ENTRY_CHARS,
  compactRow,
  COMPACT_HEAD_CHARS,
  entryOf,
  firstOffer,
  fullRef,
  fullRow,
  keyHash,
  keyOf,
  OPENER_OVERHEAD,
  refOf,
  sameInputs,
  shortRef,
  type SeenEntry,
} from './seen-codec';

export { FINGERPRINT_CHARS, keyHash, OFFER_ID_CHARS, type SeenEntry } from './seen-codec';

/**
 * What the table may take in a continue-as-new input, as JSON characters (event keys are ASCII: bytes
 * too). Under the SDK's 512 KiB payload warning (TMPRL1103) on its own, it holds a 10,000-event stream
 * of 50-character keys on one wake key (test/unit/seen-table.test.ts). The input carries the pending
 * batch and the live run's events besides (src/core/coalesce-batch.ts BATCH_BUDGET_CHARS).
 */
export const SEEN_BUDGET_CHARS = 500_000;
/** The newest entries keep their event key in full (the trail and `wakegate coalescer` read them); older ones a hash of it. */
export const KEYS_KEPT = 500;

/**
 * Events a coalescer holds within its dedup horizon before the oldest leave early, for event keys up
 * to 100 characters: the newest KEYS_KEPT in full (counted at 300 characters each), the rest compact
 * (a run's opening key is kept once for all of its compact entries). The figure docs/ARCHITECTURE.md
 * and `wakegate coalescer` state; `test/unit/seen-table.test.ts` holds it.
 */
export const SEEN_CAPACITY = KEYS_KEPT + Math.floor((SEEN_BUDGET_CHARS - KEYS_KEPT * 300) / COMPACT_ENTRY_CHARS);

/** Where the table keeps its rows and the openers of the runs its compact entries name (the coalescer's state). */
export interface SeenHolder {
  seen: SeenRow[];
  /** Compact entries name their run by `chain.n`; this holds each one's opening event key. */
  seenOpeners?: Record<string, string>;
  /** The coalescer's chain: compact entries write its own runs' references short (seen-codec.ts `shortRef`). */
  chain?: string;
}

/**
 * The coalescer's dedup of events by key: each event it decided, with its fingerprint prefix, when,
 * how, which run took it and the first offer's id, for `horizonMs` (the agent's `dedupHorizon`).
 * This is what Temporal's workflow ID policy gives the one-call path, held here because a coalesced
 * event has no workflow of its own. The entries live in the coalescer's state (`rows`, oldest
 * first), so they survive continue-as-new; the coalescer does not close while one is younger than
 * the horizon.
 *
 * Compact past the newest {@link KEYS_KEPT}: an older entry is one string, its key a 64-bit hash and
 * its run a reference into `seenOpeners`, at most COMPACT_ENTRY_CHARS whatever the key's length, so
 * {@link SEEN_CAPACITY} events fit. Bounded twice: by age (entries past the horizon are dropped) and
 * by size ({@link SEEN_BUDGET_CHARS}, so the continue-as-new input stays far under Temporal's payload
 * limit). Past the size bound the oldest entries go early and `floorMs` records the newest of them
 * (counted in `/metrics`, stated by the trail): their redeliveries are decided afresh, under new run IDs.
 * How a row is written and read is seen-codec.ts's.
 */
export class SeenTable {
  readonly rows: SeenRow[];
  private readonly openers: Record<string, string>;
  private readonly byKey = new Map<string, SeenRow>();
  private readonly refs = new Map<string, number>();
  private chars = 0;
  /** Entries at the end of `rows` that keep their key in full. */
  private full = 0;
  private readonly chain: string;

  constructor(
    holder: SeenHolder,
    private readonly horizonMs: number,
    private readonly onFloor: (floorMs: number, dropped: number) => void,
    /** The bounds: SEEN_BUDGET_CHARS and KEYS_KEPT; smaller ones let a test reach them in a few hundred events. */
    private readonly limits = { budgetChars: SEEN_BUDGET_CHARS, keysKept: KEYS_KEPT },
  ) {
    this.rows = holder.seen;
    this.openers = holder.seenOpeners ??= {};
    this.chain = holder.chain ?? '0';
    for (const row of this.rows) {
      this.byKey.set(keyOf(row), row);
      this.chars += charsOf(row);
      if (typeof row === 'string') {
        this.full = 0;
        if (!this.refIn(row).startsWith('~')) this.ref(this.refIn(row), +1);
      } else this.full += 1;
    }
    for (const [ref, key] of Object.entries(this.openers)) {
      if (this.refs.has(ref)) this.chars += ref.length + key.length + OPENER_OVERHEAD;
      else delete this.openers[ref];
    }
    this.compact();
  }

  /** The entry for an event key, if the table holds it. */
  get(eventKey: string): SeenEntry | undefined {
    const row = this.rowOf(eventKey);
    return row === undefined ? undefined : this.entryOf(row, eventKey.startsWith('#') ? undefined : eventKey);
  }

  /**
   * Record a decided event (a key decided again, after re-arming, replaces its entry): `runToken` names
   * the run that took it (what follows `@` in its run key), `offerId` the offer that was decided.
   */
  add(eventKey: string, fingerprint: string, atMs: number, decision: OfferDecision, runToken?: string, offerId?: string): void {
    this.forget(eventKey);
    const row = fullRow(eventKey, fingerprint, atMs, decision, runToken, offerId);
    this.rows.push(row);
    this.byKey.set(eventKey, row);
    this.chars += charsOf(row);
    this.full += 1;
    this.compact();
    this.bound();
  }

  /**
   * Take in the entries of an earlier chain's table (`openers` its openers' table), oldest first,
   * compact, before this table's own: those of events this table holds are passed over, and the
   * size bound then lets the oldest go as usual. `except`: event keys to leave out (offered again
   * after, to be decided here); `chain`: the earlier chain's, which its rows' short references name.
   * Returns how many were taken.
   */
  adopt(rows: readonly SeenRow[], openers: Record<string, string> = {}, except: readonly string[] = [], chain = '0'): number {
    const skip = new Set([...except, ...except.map(keyHash)]);
    const taken: string[] = [];
    for (const row of rows) {
      if (skip.has(keyOf(row))) continue;
      let small: string;
      if (typeof row === 'string') {
        const ref = fullRef(refOf(row), chain);
        if (this.byKey.has(keyOf(row))) continue;
        if (ref && !ref.startsWith('~')) {
          const opener = openers[ref];
          if (opener === undefined) continue; // names a run it cannot: useless for an answer
          if (this.openers[ref] === undefined) {
            this.openers[ref] = opener;
            this.chars += ref.length + opener.length + OPENER_OVERHEAD;
          }
          this.ref(ref, +1);
        }
        small = row.slice(0, COMPACT_HEAD_CHARS) + shortRef(ref, this.chain);
      } else {
        if (this.rowOf(row[0])) continue;
        small = this.compacted(row);
      }
      taken.push(small);
      this.byKey.set(keyOf(small), small);
      this.chars += charsOf(small);
    }
    this.rows.unshift(...taken);
    this.bound();
    return taken.length;
  }

  /** Whether `fingerprint` is the one recorded for this entry. */
  static readonly sameInputs = sameInputs;

  /** Whether `offerId` is the offer this entry's event was decided for (a retry of it gets the first answer). */
  static readonly firstOffer = firstOffer;

  /** The event now belongs to another run (a batch that had to take a new run key), decided `as` when given (a skip its run refused). */
  retake(eventKey: string, runToken: string, as?: OfferDecision): void {
    const row = this.rowOf(eventKey);
    if (!row) return;
    const { key, fingerprint, atMs, offer, ...entry } = this.entryOf(row, eventKey);
    const decision = as ?? entry.decision;
    const i = this.rows.indexOf(row);
    this.drop(row);
    const fresh: SeenEvent = [key, fingerprint, atMs, decision, runToken.startsWith(`${key}~`) ? runToken.slice(key.length) : runToken];
    if (offer) fresh.push(offer);
    const next = typeof row === 'string' ? this.compacted(fresh) : fresh;
    this.rows[i] = next;
    this.byKey.set(keyOf(next), next);
    this.chars += charsOf(next);
    // Another run may name a longer opener, or one the openers' table did not hold yet.
    this.bound();
  }

  /** The keys (as stored) of the events the run `runToken` took. */
  keysOfRun(runToken: string): string[] {
    const cut = runToken.lastIndexOf('~');
    const opener = keyHash(runToken.slice(0, cut));
    const own = runToken.slice(cut);
    return this.rows.flatMap((r) => {
      const e = this.entryOf(r);
      return e.runToken === runToken || (typeof r === 'string' && e.key === opener && this.refIn(r) === own) ? [e.key] : [];
    });
  }

  /** Forget one event (re-armed by a person; `eventKey` in full or as stored): its next delivery is decided afresh. Returns whether it was here. */
  forget(eventKey: string): boolean {
    const row = this.rowOf(eventKey);
    if (!row) return false;
    this.rows.splice(this.rows.indexOf(row), 1);
    if (typeof row !== 'string') this.full -= 1;
    this.drop(row);
    return true;
  }

  /** Drop entries past the horizon at `nowMs`. */
  prune(nowMs: number): void {
    while (this.rows.length && atOf(this.rows[0]!) <= nowMs - this.horizonMs) {
      const row = this.rows.shift()!;
      if (typeof row !== 'string') this.full -= 1;
      this.drop(row);
    }
  }

  /** When the newest entry passes the horizon (the coalescer may close then), or undefined when empty. */
  get expiresAtMs(): number | undefined {
    const newest = this.rows[this.rows.length - 1];
    return newest ? atOf(newest) + this.horizonMs : undefined;
  }

  get size(): number {
    return this.rows.length;
  }

  private rowOf(eventKey: string): SeenRow | undefined {
    return this.byKey.get(eventKey) ?? (this.rows.length > this.full && !eventKey.startsWith('#') ? this.byKey.get(keyHash(eventKey)) : undefined);
  }

  /** `eventKey`: the key the entry was looked up by (a compact entry of an event that opened its run names the run by it). */
  private entryOf(row: SeenRow, eventKey?: string): SeenEntry {
    return entryOf(row, this.openers, this.chain, eventKey);
  }

  /** A compact row's run reference in full (`chain.n`, `~chain.n`, or none). */
  private readonly refIn = (row: string): string => fullRef(refOf(row), this.chain);

  /** The compact form of a full entry: its opener goes to the openers' table. */
  private compacted(row: SeenEvent): string {
    const [key, , , , stored] = row;
    // The event opened its run: its own key (given with every look-up) names the run, nothing to keep.
    if (stored?.startsWith('~')) return compactRow(row, shortRef(stored, this.chain));
    const token = seenRunToken(key, stored);
    const cut = token?.lastIndexOf('~') ?? -1;
    const ref = token && cut > 0 ? token.slice(cut + 1) : '';
    if (ref && this.openers[ref] === undefined) {
      this.openers[ref] = token!.slice(0, cut);
      this.chars += ref.length + cut + OPENER_OVERHEAD;
    }
    if (ref) this.ref(ref, +1);
    return compactRow(row, shortRef(ref, this.chain));
  }

  /** Entries past the newest KEYS_KEPT become compact. */
  private compact(): void {
    while (this.full > this.limits.keysKept) {
      const i = this.rows.length - this.full;
      const row = this.rows[i] as SeenEvent;
      this.byKey.delete(row[0]);
      this.chars -= charsOf(row);
      const small = this.compacted(row);
      this.rows[i] = small;
      this.byKey.set(keyOf(small), small);
      this.chars += charsOf(small);
      this.full -= 1;
    }
  }

  /** The size bound: past the budget the oldest go early; `onFloor` is told how many and when the newest of them was decided. */
  private bound(): void {
    let dropped = 0;
    let floorMs = 0;
    while (this.chars > this.limits.budgetChars && this.rows.length > 1) {
      const gone = this.rows.shift()!;
      if (typeof gone !== 'string') this.full -= 1;
      this.drop(gone);
      dropped += 1;
      floorMs = Math.max(floorMs, atOf(gone));
    }
    if (dropped) this.onFloor(floorMs, dropped);
  }

  private ref(ref: string, by: number): void {
    if (!ref) return;
    const n = (this.refs.get(ref) ?? 0) + by;
    if (n > 0) return void this.refs.set(ref, n);
    this.refs.delete(ref);
    const key = this.openers[ref];
    if (key === undefined) return;
    delete this.openers[ref];
    this.chars -= ref.length + key.length + OPENER_OVERHEAD;
  }

  private drop(row: SeenRow): void {
    const key = keyOf(row);
    if (this.byKey.get(key) === row) this.byKey.delete(key);
    this.chars -= charsOf(row);
    if (typeof row === 'string' && !this.refIn(row).startsWith('~')) this.ref(this.refIn(row), -1);
  }
}
