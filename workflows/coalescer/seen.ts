import type { OfferDecision, SeenEvent, SeenRow } from '../../src/core/coalesce-types';
import { seenRunToken } from '../../src/core/ids';

/** Fingerprint characters kept per event: 64 bits of sha256 tell inputs apart as well as the whole hash would here. */
export const FINGERPRINT_CHARS = 16;
/**
 * What the table may take in a continue-as-new input, estimated as JSON characters. Temporal refuses
 * a payload over 2 MB (and warns from 512 KB); the coalescer's input carries the pending batch too.
 */
export const SEEN_BUDGET_CHARS = 1_000_000;
/** The newest entries keep their event key in full (the trail and `wakegate coalescer` read them); older ones a hash of it. */
export const KEYS_KEPT = 500;
/** Characters of an offer id kept with an event's entry: enough to tell one event's offers apart. */
export const OFFER_ID_CHARS = 8;
/** JSON characters of a full entry besides its key, run token and offer id: brackets, quotes, commas, fingerprint, time, decision. */
const ENTRY_OVERHEAD = 48;
/**
 * JSON characters of a compact entry at most: `"#hash|fingerprint|time|d|chain.n|offer",` (a hash of
 * 15, time in base 36, a run reference of up to 12), whatever its event key's length.
 */
const COMPACT_ENTRY_CHARS = 3 + 15 + FINGERPRINT_CHARS + 8 + 1 + 12 + OFFER_ID_CHARS + 5;
/** JSON characters of one entry of the openers' table besides its two strings. */
const OPENER_OVERHEAD = 6;

/**
 * Events a coalescer holds within its dedup horizon before the oldest leave early, for event keys up
 * to 100 characters: the newest KEYS_KEPT in full (counted at 300 characters each), the rest compact
 * (a run's opening key is kept once for all of its compact entries). The
 * figure docs/ARCHITECTURE.md and `wakegate coalescer` state; `test/unit/seen-table.test.ts` holds it.
 */
export const SEEN_CAPACITY = KEYS_KEPT + Math.floor((SEEN_BUDGET_CHARS - KEYS_KEPT * 300) / COMPACT_ENTRY_CHARS);

const CODES: Record<OfferDecision, string> = { started: 's', coalesced: 'c', skipped: 'k', steered: 'r', stale: 'x', mismatch: 'm' };
const DECISIONS = Object.fromEntries(Object.entries(CODES).map(([d, c]) => [c, d])) as Record<string, OfferDecision>;

/** One decided event as the table answers for it (its key as stored: a compact entry's is `#` and a hash). */
export interface SeenEntry {
  key: string;
  fingerprint: string;
  atMs: number;
  decision: OfferDecision;
  /** What follows `@` in the run key of the run that took it; undefined when none did. */
  runToken?: string;
  offer?: string;
}

/**
 * 64 bits of a string, deterministic in workflow code (no crypto there): two 32-bit multiplicative
 * hashes mixed into each other, the cyrb53 scheme widened. A compact entry stands for its event key
 * by it; two keys of one wake key within one horizon meet with a chance of about n²/2⁶⁵.
 */
export function keyHash(key: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `#${(h2 >>> 0).toString(36).padStart(7, '0')}${(h1 >>> 0).toString(36).padStart(7, '0')}`;
}

/** Where the table keeps its rows and the openers of the runs its compact entries name (the coalescer's state). */
export interface SeenHolder {
  seen: SeenRow[];
  /** Compact entries name their run by `chain.n`; this holds each one's opening event key. */
  seenOpeners?: Record<string, string>;
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
 */
export class SeenTable {
  readonly rows: SeenRow[];
  private readonly openers: Record<string, string>;
  private readonly byKey = new Map<string, SeenRow>();
  private readonly refs = new Map<string, number>();
  private chars = 0;
  /** Entries at the end of `rows` that keep their key in full. */
  private full = 0;

  constructor(
    holder: SeenHolder,
    private readonly horizonMs: number,
    private readonly onFloor: (floorMs: number, dropped: number) => void,
  ) {
    this.rows = holder.seen;
    this.openers = holder.seenOpeners ??= {};
    for (const row of this.rows) {
      this.byKey.set(keyOf(row), row);
      this.chars += this.charsOf(row);
      if (typeof row === 'string') {
        this.full = 0;
        if (!refOf(row).startsWith('~')) this.ref(refOf(row), +1);
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
    const row: SeenEvent = [eventKey, fingerprint.slice(0, FINGERPRINT_CHARS), atMs, decision];
    if (runToken !== undefined || offerId !== undefined) row.push(runToken?.startsWith(`${eventKey}~`) ? runToken.slice(eventKey.length) : (runToken ?? ''));
    if (offerId !== undefined) row.push(offerId.slice(0, OFFER_ID_CHARS));
    this.rows.push(row);
    this.byKey.set(eventKey, row);
    this.chars += this.charsOf(row);
    this.full += 1;
    this.compact();
    let dropped = 0;
    let floorMs = 0;
    while (this.chars > SEEN_BUDGET_CHARS && this.rows.length > 1) {
      const gone = this.rows.shift()!;
      this.drop(gone);
      dropped += 1;
      floorMs = atOf(gone);
    }
    if (dropped) this.onFloor(floorMs, dropped);
  }

  /**
   * Take in the entries of an earlier chain's table (`openers` its openers' table), oldest first,
   * compact, before this table's own: those of events this table holds are passed over, and the
   * size bound then lets the oldest go as usual. `except`: event keys to leave out (offered again
   * after, to be decided here). Returns how many were taken.
   */
  adopt(rows: readonly SeenRow[], openers: Record<string, string> = {}, except: readonly string[] = []): number {
    const skip = new Set([...except, ...except.map(keyHash)]);
    const taken: string[] = [];
    for (const row of rows) {
      if (skip.has(keyOf(row))) continue;
      let small: string;
      if (typeof row === 'string') {
        const ref = refOf(row);
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
        small = row;
      } else {
        if (this.rowOf(row[0])) continue;
        small = this.compacted(row);
      }
      taken.push(small);
      this.byKey.set(keyOf(small), small);
      this.chars += this.charsOf(small);
    }
    this.rows.unshift(...taken);
    let dropped = 0;
    let floorMs = 0;
    while (this.chars > SEEN_BUDGET_CHARS && this.rows.length > 1) {
      const gone = this.rows.shift()!;
      if (typeof gone !== 'string') this.full -= 1;
      this.drop(gone);
      dropped += 1;
      floorMs = atOf(gone);
    }
    if (dropped) this.onFloor(floorMs, dropped);
    return taken.length;
  }

  /** Whether `fingerprint` is the one recorded for this entry. */
  static sameInputs(entry: SeenEntry, fingerprint: string): boolean {
    return entry.fingerprint === fingerprint.slice(0, FINGERPRINT_CHARS);
  }

  /** Whether `offerId` is the offer this entry's event was decided for (a retry of it gets the first answer). */
  static firstOffer(entry: SeenEntry, offerId: string | undefined): boolean {
    return offerId !== undefined && entry.offer === offerId.slice(0, OFFER_ID_CHARS);
  }

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
    this.chars += this.charsOf(next);
  }

  /** The keys (as stored) of the events the run `runToken` took. */
  keysOfRun(runToken: string): string[] {
    const cut = runToken.lastIndexOf('~');
    const opener = keyHash(runToken.slice(0, cut));
    const own = runToken.slice(cut);
    return this.rows.flatMap((r) => {
      const e = this.entryOf(r);
      return e.runToken === runToken || (typeof r === 'string' && e.key === opener && refOf(r) === own) ? [e.key] : [];
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
    if (typeof row !== 'string') {
      const [key, fingerprint, atMs, decision, stored, offer] = row;
      const runToken = seenRunToken(key, stored);
      return { key, fingerprint, atMs, decision, ...(runToken ? { runToken } : {}), ...(offer ? { offer } : {}) };
    }
    const [key, fingerprint, at, code, ref, offer] = row.split('|') as [string, string, string, string, string, string];
    const runToken = ref.startsWith('~')
      ? eventKey === undefined
        ? undefined
        : eventKey + ref
      : ref && this.openers[ref] !== undefined
        ? `${this.openers[ref]}~${ref}`
        : undefined;
    return {
      key,
      fingerprint,
      atMs: parseInt(at, 36),
      decision: DECISIONS[code]!,
      ...(runToken !== undefined ? { runToken } : {}),
      ...(offer ? { offer } : {}),
    };
  }

  /** The compact form of a full entry: its opener goes to the openers' table. */
  private compacted(row: SeenEvent): string {
    const [key, fingerprint, atMs, decision, stored, offer] = row;
    // The event opened its run: its own key (given with every look-up) names the run, nothing to keep.
    if (stored?.startsWith('~'))
      return [key.startsWith('#') ? key : keyHash(key), fingerprint, atMs.toString(36), CODES[decision], stored, offer ?? ''].join('|');
    const token = seenRunToken(key, stored);
    const cut = token?.lastIndexOf('~') ?? -1;
    const ref = token && cut > 0 ? token.slice(cut + 1) : '';
    if (ref && this.openers[ref] === undefined) {
      this.openers[ref] = token!.slice(0, cut);
      this.chars += ref.length + cut + OPENER_OVERHEAD;
    }
    if (ref) this.ref(ref, +1);
    return [key.startsWith('#') ? key : keyHash(key), fingerprint, atMs.toString(36), CODES[decision], ref, offer ?? ''].join('|');
  }

  /** Entries past the newest KEYS_KEPT become compact. */
  private compact(): void {
    while (this.full > KEYS_KEPT) {
      const i = this.rows.length - this.full;
      const row = this.rows[i] as SeenEvent;
      this.byKey.delete(row[0]);
      this.chars -= this.charsOf(row);
      const small = this.compacted(row);
      this.rows[i] = small;
      this.byKey.set(keyOf(small), small);
      this.chars += this.charsOf(small);
      this.full -= 1;
    }
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
    this.chars -= this.charsOf(row);
    if (typeof row === 'string' && !refOf(row).startsWith('~')) this.ref(refOf(row), -1);
  }

  private charsOf(row: SeenRow): number {
    if (typeof row === 'string') return row.length + 3;
    return ENTRY_OVERHEAD + row[0].length + (row[4]?.length ?? 0) + (row[5]?.length ?? 0);
  }
}

const keyOf = (row: SeenRow) => (typeof row === 'string' ? row.slice(0, row.indexOf('|')) : row[0]);
const refOf = (row: string) => row.split('|')[4] ?? '';
const atOf = (row: SeenRow) => (typeof row === 'string' ? parseInt(row.split('|')[2]!, 36) : row[2]);
