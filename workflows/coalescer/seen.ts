import type { OfferDecision, SeenEvent, SeenRow } from '../../src/core/coalesce-types';
import { seenRunToken } from '../../src/core/ids';
import {
  atOf,
  charsOf,
  compactRow,
  COMPACT_HEAD_CHARS,
  entryOf,
  firstOffer,
  fullRef,
  fullRow,
  keyHash,
  keyOf,
  openerChars,
  refOf,
  sameInputs,
  shortRef,
  type SeenEntry,
} from './seen-codec';
import { KEYS_KEPT, Markers, packRows, SEEN_BUDGET_CHARS, unpackRows, type SeenHolder } from './seen-pack';

export { FINGERPRINT_CHARS, keyHash, OFFER_ID_CHARS, type SeenEntry } from './seen-codec';
export { KEYS_KEPT, SEEN_BUDGET_CHARS, SEEN_CAPACITY, type SeenHolder } from './seen-pack';

/**
 * The coalescer's dedup of events by key: each event it decided, with its fingerprint prefix, when,
 * how, which run took it and the first offer's id, for `horizonMs` (the agent's `dedupHorizon`).
 * This is what Temporal's workflow ID policy gives the one-call path, held here because a coalesced
 * event has no workflow of its own. The entries live in the coalescer's state (`rows`, oldest
 * first), so they survive continue-as-new; the coalescer does not close while one is younger than
 * the horizon.
 *
 * Compact past the newest {@link KEYS_KEPT}: an older entry is one string, its key a 64-bit hash and
 * its run a reference into `seenOpeners`, so SEEN_CAPACITY events fit. Bounded twice: by age (entries
 * past the horizon are dropped) and by size ({@link SEEN_BUDGET_CHARS}, and at a continue-as-new what
 * the rest of the input leaves: carry.ts). Past the size bound the oldest entries go early and
 * `floorMs` records the newest of them (counted in `/metrics`, stated by the trail): their
 * redeliveries are decided afresh, under new run IDs. How a row is written and read is seen-codec.ts's;
 * how rows are packed for the input, seen-pack.ts's.
 */
export class SeenTable {
  readonly rows: SeenRow[];
  private readonly openers: Record<string, string>;
  private readonly byKey = new Map<string, SeenRow>();
  private readonly refs = new Map<string, number>();
  /** Bytes of the rows (compact ones' heads) and the openers' table; the packed form's markers are `markers`'. */
  private chars = 0;
  private readonly markers: Markers;
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
    // Packed as the continue-as-new input carries them (seen-codec.ts `packRows`): one row each again.
    if (holder.seen.some((r) => typeof r === 'string' && r.startsWith('!'))) {
      const rows = unpackRows(holder.seen);
      holder.seen.length = 0;
      for (const r of rows) holder.seen.push(r);
    }
    this.rows = holder.seen;
    this.markers = new Markers(this.rows);
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
      if (this.refs.has(ref)) this.chars += openerChars(ref, key);
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
    if (this.byKey.has(eventKey) || this.rows.length > this.full) this.forget(eventKey);
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
    if (rows.some((r) => typeof r === 'string' && r.startsWith('!'))) rows = unpackRows(rows); // a continue-as-new input's (recover.ts `untakenOf`)
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
            this.chars += openerChars(ref, opener);
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
    this.markers.stale = true;
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
    this.markers.stale = true;
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
    this.markers.stale = true;
    return true;
  }

  /** Drop entries past the horizon at `nowMs`. */
  prune(nowMs: number): void {
    while (this.rows.length && atOf(this.rows[0]!) <= nowMs - this.horizonMs) this.shift();
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
      this.chars += openerChars(ref, this.openers[ref]!);
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
      this.markers.compacted(i);
    }
  }

  /** The size bound: past `limitChars` (less at a continue-as-new: carry.ts) the oldest go early; `onFloor` is told how many and when the newest went. */
  bound(limitChars = this.limits.budgetChars): void {
    let dropped = 0;
    let floorMs = 0;
    while (this.packedChars > limitChars && this.rows.length > 0) {
      const gone = this.shift();
      dropped += 1;
      floorMs = Math.max(floorMs, atOf(gone));
    }
    if (dropped) this.onFloor(floorMs, dropped);
  }

  /** UTF-8 bytes of JSON the table takes in the continue-as-new input: its rows as {@link packed} writes them, its openers. */
  get packedChars(): number {
    return this.chars + this.markers.total;
  }

  /** The rows as the continue-as-new input carries them (seen-pack.ts `packRows`), and the openers' table. */
  packed(): { seen: SeenRow[]; seenOpeners: Record<string, string> } {
    return { seen: packRows(this.rows), seenOpeners: this.openers };
  }

  /** The oldest row goes (its markers' bytes with it). */
  private shift(): SeenRow {
    const gone = this.markers.shift(() => this.rows.shift()!);
    if (typeof gone !== 'string') this.full -= 1;
    this.drop(gone);
    return gone;
  }

  private ref(ref: string, by: number): void {
    if (!ref) return;
    const n = (this.refs.get(ref) ?? 0) + by;
    if (n > 0) return void this.refs.set(ref, n);
    this.refs.delete(ref);
    const key = this.openers[ref];
    if (key === undefined) return;
    delete this.openers[ref];
    this.chars -= openerChars(ref, key);
  }

  private drop(row: SeenRow): void {
    const key = keyOf(row);
    if (this.byKey.get(key) === row) this.byKey.delete(key);
    this.chars -= charsOf(row);
    if (typeof row === 'string' && !this.refIn(row).startsWith('~')) this.ref(this.refIn(row), -1);
  }
}
