import type { OfferDecision, SeenEvent, SeenRow } from '../../src/core/coalesce-types';
import { hash64 } from '../../src/core/hash';
import { seenRunToken } from '../../src/core/ids';
import { jsonBytes } from '../../src/core/bytes';

/*
 * The seen table's rows (seen.ts), as they are written in the coalescer's state: a full entry is a
 * SeenEvent tuple, a compact one a string of 35 base64url characters (the event key's 64-bit hash,
 * the fingerprint prefix, when, the decision, the first offer's id prefix; bit layout below) followed
 * by its run reference. How a row is written and read, and how many JSON characters it takes; the
 * table decides which rows it keeps, and in which form.
 *
 * Why this form: a hot wake key's table is most of its coalescer's continue-as-new input, and the
 * SDK warns past 512 KB of payload (TMPRL1103). The earlier `#hash|fingerprint|time|d|chain.n|offer`
 * string took about 68 JSON characters a row; this one takes about 41 for the same facts, with none
 * of them cut shorter: every answer a compact row gave, it gives still.
 */

/** Fingerprint characters kept per event: 64 bits of sha256 tell inputs apart as well as the whole hash would here. */
export const FINGERPRINT_CHARS = 16;
/** Characters of an offer id kept with an event's entry: enough to tell one event's offers apart. */
export const OFFER_ID_CHARS = 8;
/** Characters of a compact row before its run reference: 210 bits in base64url. */
export const COMPACT_HEAD_CHARS = 35;
/**
 * JSON bytes a compact entry takes at most, counted for the table's stated capacity (seen.ts
 * SEEN_CAPACITY), as the continue-as-new input carries it for a run of this chain: its 35-character
 * head, the marker of its run when the entry before it names another (`!.n!`, n up to four base-36
 * digits; see {@link packRows}), and its share of its run's opener in the openers' table (a 100-byte
 * key kept once for ten entries). Entries of one run side by side share one marker and one opener: a
 * hot key's take 35.
 */
export const COMPACT_ENTRY_CHARS = COMPACT_HEAD_CHARS + 10;
/** JSON characters of one entry of the openers' table besides its two strings' own characters. */
export const OPENER_OVERHEAD = 6;
/** JSON bytes of one entry of the openers' table (`"ref":"key",`). */
export const openerChars = (ref: string, key: string): number => ref.length + jsonBytes(key) + OPENER_OVERHEAD - 2;

const CODES: Record<OfferDecision, number> = { started: 0, coalesced: 1, skipped: 2, steered: 3, stale: 4, mismatch: 5 };
const DECISIONS = Object.fromEntries(Object.entries(CODES).map(([d, c]) => [c, d])) as Record<number, OfferDecision>;
export const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
export const B64_AT: Record<string, number> = Object.fromEntries([...B64].map((c, i) => [c, i]));
const HEX = /^[0-9a-f]+$/;

/** Writes unsigned fields (up to 32 bits each), most significant bit first, six bits to a base64url character. */
class BitWriter {
  private out = '';
  private acc = 0;
  private n = 0;

  put(value: number, bits: number): this {
    for (let i = bits - 1; i >= 0; i--) {
      this.acc = this.acc * 2 + (Math.floor(value / 2 ** i) % 2);
      if (++this.n === 6) {
        this.out += B64[this.acc];
        this.acc = this.n = 0;
      }
    }
    return this;
  }

  /** The characters written; `bits` so far must be a multiple of six. */
  get text(): string {
    return this.out;
  }
}

/** Reads what a BitWriter wrote, field by field, from `offset` characters into `text`. */
class BitReader {
  private bit = 0;

  constructor(
    private readonly text: string,
    private readonly offset = 0,
  ) {}

  take(bits: number): number {
    let v = 0;
    for (let i = 0; i < bits; i++, this.bit++) {
      const c = B64_AT[this.text[this.offset + Math.floor(this.bit / 6)]!]!;
      v = v * 2 + ((c >> (5 - (this.bit % 6))) & 1);
    }
    return v;
  }
}

const hex32 = (n: number) => n.toString(16).padStart(8, '0');

/**
 * A prefix kept in a compact row as 64 (fingerprint) or 32 (offer id) bits: exactly, when it is that
 * many bits of lowercase hex (sha256 fingerprints and UUID offer ids always are), else as that many
 * bits of its hash, read back with a `#` before it. `[hashed, high, low]`.
 */
function prefixBits(value: string, hexChars: 16 | 8): [hashed: 0 | 1, high: number, low: number] {
  const split = (hex: string): [number, number] => (hexChars === 16 ? [parseInt(hex.slice(0, 8), 16), parseInt(hex.slice(8), 16)] : [0, parseInt(hex, 16)]);
  // Already read back from a compact row (a retake writes it again): its own bits.
  if (value.length === hexChars + 1 && value.startsWith('#') && HEX.test(value.slice(1))) return [1, ...split(value.slice(1))];
  const prefix = value.slice(0, hexChars);
  if (prefix.length === hexChars && HEX.test(prefix)) return [0, ...split(prefix)];
  const [high, low] = hash64(prefix);
  return [1, hexChars === 16 ? high : 0, low];
}

/** How a compact row reads back a prefix it keeps (see {@link prefixBits}): the form `sameInputs` and `firstOffer` compare with. */
export function storedPrefix(prefix: string, hexChars: 16 | 8): string {
  const [hashed, high, low] = prefixBits(prefix, hexChars);
  return `${hashed ? '#' : ''}${hexChars === 16 ? hex32(high) : ''}${hex32(low)}`;
}

/** Whether `fingerprint` is the one recorded for this entry (a compact entry reads it back as storedPrefix writes it). */
export const sameInputs = (entry: SeenEntry, fingerprint: string): boolean =>
  entry.fingerprint === fingerprint.slice(0, FINGERPRINT_CHARS) || entry.fingerprint === storedPrefix(fingerprint, 16);

/** Whether `offerId` is the offer this entry's event was decided for (a retry of it gets the first answer). */
export const firstOffer = (entry: SeenEntry, offerId: string | undefined): boolean =>
  offerId !== undefined && (entry.offer === offerId.slice(0, OFFER_ID_CHARS) || entry.offer === storedPrefix(offerId, 8));

/**
 * A compact entry stands for its event key by 64 bits of it (src/core/hash.ts), written as `#` and 11
 * base64url characters. A new event is taken for one the table holds only when all 64 bits meet: with
 * n entries held (at most SEEN_CAPACITY, about 10,000), the chance that a given new key meets any of
 * them is n/2⁶⁴, about 5·10⁻¹⁶, and that any two keys of one wake key within one horizon meet is
 * about n²/2⁶⁵, under 3·10⁻¹². The fingerprint and offer id prefixes are kept whole (hex), so
 * nothing else is any less exact than in a full entry.
 */
export function keyHash(key: string): string {
  const [high, low] = hash64(key);
  return `#${new BitWriter().put(0, 2).put(high, 32).put(low, 32).text}`;
}

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
 * A full entry of a decided event: `runToken` names the run that took it (what follows `@` in its run
 * key; kept as `~…` when the event opened that run), `offerId` the offer that was decided.
 */
export function fullRow(eventKey: string, fingerprint: string, atMs: number, decision: OfferDecision, runToken?: string, offerId?: string): SeenEvent {
  const row: SeenEvent = [eventKey, fingerprint.slice(0, FINGERPRINT_CHARS), atMs, decision];
  if (runToken !== undefined || offerId !== undefined) row.push(runToken?.startsWith(`${eventKey}~`) ? runToken.slice(eventKey.length) : (runToken ?? ''));
  if (offerId !== undefined) row.push(offerId.slice(0, OFFER_ID_CHARS));
  return row;
}

/**
 * The compact string of a full entry, its run named by `ref` (a `~…` of an event that opened its run,
 * or a `chain.n` of the openers' table; the table writes its own chain's as `~.n` and `.n`, see
 * {@link shortRef}). Layout, most significant bit first: 2 zero bits and the key's 64-bit hash (the
 * 11 characters of keyHash), the fingerprint prefix (1 bit hashed or not, 64 bits), decided at (42
 * bits of epoch ms: until the year 2109), the decision (3 bits), the first offer's id prefix (2 bits:
 * none, hex, hashed; 32 bits): 210 bits, 35 characters. Then the reference.
 */
export function compactRow(row: SeenEvent, ref: string): string {
  const [key, fingerprint, atMs, decision, , offer] = row;
  const [fpHashed, fpHigh, fpLow] = prefixBits(fingerprint, 16);
  const [offerHashed, , offerBits] = offer ? prefixBits(offer, 8) : [0, 0, 0];
  const rest = new BitWriter()
    .put(fpHashed, 1)
    .put(fpHigh, 32)
    .put(fpLow, 32)
    .put(Math.floor(atMs / 2 ** 32), 10)
    .put(atMs % 2 ** 32, 32)
    .put(CODES[decision], 3)
    .put(offer ? 1 + offerHashed : 0, 2)
    .put(offerBits, 32).text;
  return `${(key.startsWith('#') ? key : keyHash(key)).slice(1)}${rest}${ref}`;
}

/** A run reference of chain `chain` as the table writes it: `~.n` and `.n` (its chain is the holder's). */
export function shortRef(ref: string, chain: string): string {
  const self = ref.startsWith('~');
  return (self ? ref.slice(1) : ref).startsWith(`${chain}.`) ? `${self ? '~' : ''}${ref.slice(chain.length + (self ? 1 : 0))}` : ref;
}

/** A run reference as written back in full (`chain.n`, `~chain.n`), `chain` the holder's. */
export function fullRef(ref: string, chain: string): string {
  if (ref.startsWith('.')) return chain + ref;
  if (ref.startsWith('~.')) return `~${chain}${ref.slice(1)}`;
  return ref;
}

/**
 * What a row says. `openers`: the openers' table, by which a compact entry names its run; `eventKey`:
 * the key the entry was looked up by (a compact entry of an event that opened its run names the run
 * by it); `chain`: the holder's chain, which its own short references name.
 */
export function entryOf(row: SeenRow, openers: Record<string, string>, chain: string, eventKey?: string): SeenEntry {
  if (typeof row !== 'string') {
    const [key, fingerprint, atMs, decision, stored, offer] = row;
    const runToken = seenRunToken(key, stored);
    return { key, fingerprint, atMs, decision, ...(runToken ? { runToken } : {}), ...(offer ? { offer } : {}) };
  }
  const bits = new BitReader(row, 11);
  const fpHashed = bits.take(1);
  const fingerprint = `${fpHashed ? '#' : ''}${hex32(bits.take(32))}${hex32(bits.take(32))}`;
  const atMs = bits.take(10) * 2 ** 32 + bits.take(32);
  const decision = DECISIONS[bits.take(3)]!;
  const offerKind = bits.take(2);
  const offerBits = bits.take(32);
  const offer = offerKind ? `${offerKind === 2 ? '#' : ''}${hex32(offerBits)}` : undefined;
  const ref = fullRef(refOf(row), chain);
  const runToken = ref.startsWith('~')
    ? eventKey === undefined
      ? undefined
      : eventKey + ref
    : ref && openers[ref] !== undefined
      ? `${openers[ref]}~${ref}`
      : undefined;
  return { key: keyOf(row), fingerprint, atMs, decision, ...(runToken !== undefined ? { runToken } : {}), ...(offer ? { offer } : {}) };
}

/**
 * JSON bytes a row takes in the continue-as-new input: a full entry as written, with its comma; a
 * compact one its head alone, packed with its neighbours ({@link packRows}; the markers between runs
 * are the table's to count, seen.ts `markAt`).
 */
export function charsOf(row: SeenRow): number {
  return typeof row === 'string' ? COMPACT_HEAD_CHARS : jsonBytes(row) + 1;
}

/** A row's key as stored: a compact one's is `#` and a hash. */
export const keyOf = (row: SeenRow): string => (typeof row === 'string' ? `#${row.slice(0, 11)}` : row[0]);
/** A compact row's run reference, as written (its own chain's short). */
export const refOf = (row: string): string => row.slice(COMPACT_HEAD_CHARS);
/** When a row's event was decided. */
export const atOf = (row: SeenRow): number => {
  if (typeof row !== 'string') return row[2];
  const bits = new BitReader(row, 11);
  bits.take(65);
  return bits.take(10) * 2 ** 32 + bits.take(32);
};
