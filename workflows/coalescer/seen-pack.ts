import type { SeenRow } from '../../src/core/coalesce-types';
import { SEEN_SHARE } from '../../src/core/coalesce-carried';
import { B64, B64_AT, COMPACT_ENTRY_CHARS, COMPACT_HEAD_CHARS, refOf } from './seen-codec';

/*
 * The seen table's rows as a continue-as-new input carries them (seen.ts): compact rows side by side
 * packed into one string, and what that form takes, kept up to date as the table changes. A hot key's
 * compact row takes 35 characters so, not 41 to 44 (quotes, a comma and its run's reference each).
 */

/**
 * What the table may take in a continue-as-new input, as UTF-8 bytes of JSON: its share of the whole
 * input's bound (src/core/coalesce-carried.ts SEEN_SHARE), packed (seen-codec.ts `packRows`). At the
 * turn it takes less when the rest leaves less (carry.ts `carriedInput`).
 */
export const SEEN_BUDGET_CHARS = SEEN_SHARE;
/**
 * The newest entries keep their event key in full (the trail and `wakegate coalescer` read them by
 * key); older ones a hash of it. 500 of a hot key's took 85,000 bytes of its input, 100 take 17,000.
 */
export const KEYS_KEPT = 100;

/**
 * Events a coalescer holds within its dedup horizon before the oldest leave early, for event keys up
 * to 100 characters: the newest KEYS_KEPT in full (counted at 300 bytes each), the rest compact at
 * COMPACT_ENTRY_CHARS (a run's opening key is kept once for all of its compact entries), within the
 * table's share of the input. The figure docs/ARCHITECTURE.md and `wakegate coalescer` state;
 * `test/unit/seen-table.test.ts` holds it.
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

/** The run a compact row belongs to, as its marker names it: its reference without the `~` of an opener. */
export const groupOf = (row: string): string => {
  const ref = refOf(row);
  return ref.startsWith('~') ? ref.slice(1) : ref;
};

/** The head's first character carries 2 zero bits (keyHash): the higher one marks, packed, an entry whose event opened its run. */
const OPENER_BIT = 32;

/**
 * The rows as the continue-as-new input carries them: full entries as they are; each stretch of
 * compact ones side by side as one string of their 35-character heads, with a marker `!ref!` before
 * the first and wherever the run changes (`!!`: none), an entry whose own key opened the run marked
 * by a bit of its head. A hot key's compact entry takes 35 characters so, not 41 to 44 (quotes, a
 * comma and its run's reference each). {@link unpackRows} gives the rows back as they were.
 */
export function packRows(rows: readonly SeenRow[]): SeenRow[] {
  const out: SeenRow[] = [];
  let packed: string[] | undefined;
  let group: string | undefined;
  for (const row of rows) {
    if (typeof row !== 'string') {
      if (packed) out.push(packed.join(''));
      packed = group = undefined;
      out.push(row);
      continue;
    }
    packed ??= [];
    const g = groupOf(row);
    if (g !== group) packed.push(`!${g}!`);
    group = g;
    const head = row.slice(0, COMPACT_HEAD_CHARS);
    packed.push(refOf(row).startsWith('~') ? B64[B64_AT[head[0]!]! + OPENER_BIT]! + head.slice(1) : head);
  }
  if (packed) out.push(packed.join(''));
  return out;
}

/** The rows {@link packRows} packed, as the table holds them (a compact row: its head and its run's reference). */
export function unpackRows(rows: readonly SeenRow[]): SeenRow[] {
  const out: SeenRow[] = [];
  for (const row of rows) {
    if (typeof row !== 'string' || !row.startsWith('!')) {
      out.push(row);
      continue;
    }
    let group = '';
    for (let i = 0; i < row.length;) {
      if (row[i] === '!') {
        const end = row.indexOf('!', i + 1);
        group = row.slice(i + 1, end);
        i = end + 1;
        continue;
      }
      const head = row.slice(i, i + COMPACT_HEAD_CHARS);
      i += COMPACT_HEAD_CHARS;
      const first = B64_AT[head[0]!]!;
      out.push(first >= OPENER_BIT ? `${B64[first - OPENER_BIT]}${head.slice(1)}~${group}` : head + group);
    }
  }
  return out;
}

/**
 * The bytes {@link packRows} spends beyond the rows' own (a compact row's head, a full row as
 * written): a marker before a compact row whose run differs from the row before it, and a new string
 * (quotes, comma) where a stretch of compact rows begins. Kept up to date for the table's common
 * changes (a row compacted at the end of the compact ones, the oldest row dropped) and counted again
 * after any other (`stale`).
 */
export class Markers {
  private chars = 0;
  /** Set after a change in the middle of the rows (a forget, a retake, an adoption): counted again when next asked. */
  stale = true;

  constructor(private readonly rows: readonly SeenRow[]) {}

  /** The bytes of every marker. */
  get total(): number {
    if (this.stale) {
      this.chars = 0;
      for (let i = 0; i < this.rows.length; i++) this.chars += this.at(i);
      this.stale = false;
    }
    return this.chars;
  }

  /** Row `i` became compact, every row after it full: only its own marker is new. */
  compacted(i: number): void {
    if (!this.stale) this.chars += this.at(i);
  }

  /** The oldest row is about to go: `drop` takes it, and the row after it starts the stretch. */
  shift<T>(drop: () => T): T {
    if (!this.stale) this.chars -= this.at(0) + this.at(1);
    const gone = drop();
    if (!this.stale) this.chars += this.at(0);
    return gone;
  }

  /** What packing spends before row `i` beyond its head: a new string and its marker, a marker, or nothing. */
  private at(i: number): number {
    const row = this.rows[i];
    if (typeof row !== 'string') return 0;
    const before = this.rows[i - 1];
    const group = groupOf(row);
    if (typeof before !== 'string') return 3 + group.length + 2;
    return groupOf(before) === group ? 0 : group.length + 2;
  }
}
