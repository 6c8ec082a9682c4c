import type { OfferDecision, SeenEvent, SeenRow } from '../../src/core/coalesce-types';
import { hash64 } from '../../src/core/hash';
import { seenRunToken } from '../../src/core/ids';

/*
 * The seen table's rows (seen.ts), as they are written in the coalescer's state: a full entry is a
 * SeenEvent tuple, a compact one the string `#keyHash|fingerprint|atMs(base 36)|decision code|run ref|offer`.
 * How a row is written and read, and how many JSON characters it takes; the table decides which
 * rows it keeps, and in which form.
 */

/** Fingerprint characters kept per event: 64 bits of sha256 tell inputs apart as well as the whole hash would here. */
export const FINGERPRINT_CHARS = 16;
/** Characters of an offer id kept with an event's entry: enough to tell one event's offers apart. */
export const OFFER_ID_CHARS = 8;
/** JSON characters of a full entry besides its key, run token and offer id: brackets, quotes, commas, fingerprint, time, decision. */
const ENTRY_OVERHEAD = 48;
/**
 * JSON characters of a compact entry at most: `"#hash|fingerprint|time|d|chain.n|offer",` (a hash of
 * 15, time in base 36, a run reference of up to 12), whatever its event key's length.
 */
export const COMPACT_ENTRY_CHARS = 3 + 15 + FINGERPRINT_CHARS + 8 + 1 + 12 + OFFER_ID_CHARS + 5;
/** JSON characters of one entry of the openers' table besides its two strings. */
export const OPENER_OVERHEAD = 6;

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
 * A compact entry stands for its event key by 64 bits of it (src/core/hash.ts); two keys of one
 * wake key within one horizon meet with a chance of about n²/2⁶⁵.
 */
export function keyHash(key: string): string {
  const [high, low] = hash64(key);
  return `#${high.toString(36).padStart(7, '0')}${low.toString(36).padStart(7, '0')}`;
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

/** The compact string of a full entry, its run named by `ref` (a `~…` of an event that opened its run, or a `chain.n` of the openers' table). */
export function compactRow(row: SeenEvent, ref: string): string {
  const [key, fingerprint, atMs, decision, , offer] = row;
  return [key.startsWith('#') ? key : keyHash(key), fingerprint, atMs.toString(36), CODES[decision], ref, offer ?? ''].join('|');
}

/**
 * What a row says. `openers`: the openers' table, by which a compact entry names its run; `eventKey`:
 * the key the entry was looked up by (a compact entry of an event that opened its run names the run by it).
 */
export function entryOf(row: SeenRow, openers: Record<string, string>, eventKey?: string): SeenEntry {
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
    : ref && openers[ref] !== undefined
      ? `${openers[ref]}~${ref}`
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

/** JSON characters a row takes in the coalescer's state. */
export function charsOf(row: SeenRow): number {
  if (typeof row === 'string') return row.length + 3;
  return ENTRY_OVERHEAD + row[0].length + (row[4]?.length ?? 0) + (row[5]?.length ?? 0);
}

/** A row's key as stored: a compact one's is `#` and a hash. */
export const keyOf = (row: SeenRow): string => (typeof row === 'string' ? row.slice(0, row.indexOf('|')) : row[0]);
/** A compact row's run reference. */
export const refOf = (row: string): string => row.split('|')[4] ?? '';
/** When a row's event was decided. */
export const atOf = (row: SeenRow): number => (typeof row === 'string' ? parseInt(row.split('|')[2]!, 36) : row[2]);
