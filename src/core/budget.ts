import type { BudgetDimension, BudgetLimits } from './policy';

/** What a step spends, in every dimension but wall clock (which is a timer, not a counter). */
export type Spend = Omit<BudgetLimits, 'wallClockMs'>;
export type Charge = Partial<Spend>;

/**
 * A run's budget pool as plain JSON (it lives in workflow state). A step first `reserve`s its
 * worst case, then `settle`s to what it actually spent; subagents are granted a reservation from
 * the same pool, so everything in flight together can never pass the limits.
 */
export interface BudgetPool {
  limits: BudgetLimits;
  spent: Spend;
  reserved: Spend;
}

const COUNTERS = ['turns', 'tokens', 'toolCalls', 'costUsd'] as const;
const zero = (): Spend => ({ turns: 0, tokens: 0, toolCalls: 0, costUsd: 0 });

export function newPool(limits: BudgetLimits): BudgetPool {
  return { limits: { ...limits }, spent: zero(), reserved: zero() };
}

export function left(pool: BudgetPool, dim: keyof Spend): number {
  return pool.limits[dim] - pool.spent[dim] - pool.reserved[dim];
}

export type Reservation = { ok: true; charge: Spend } | { ok: false; dimension: BudgetDimension; need: number; left: number };

/** Reserve `charge` if every dimension has room; otherwise reserve nothing and name the first that does not. */
export function reserve(pool: BudgetPool, charge: Charge): Reservation {
  const c = { ...zero(), ...charge };
  for (const d of COUNTERS) {
    // A tiny epsilon so float cost sums do not refuse an exact fit.
    if (c[d] > left(pool, d) + 1e-12) return { ok: false, dimension: d, need: c[d], left: left(pool, d) };
  }
  for (const d of COUNTERS) pool.reserved[d] += c[d];
  return { ok: true, charge: c };
}

/** Replace a reservation by what was actually spent. */
export function settle(pool: BudgetPool, reserved: Spend, actual: Charge): void {
  for (const d of COUNTERS) {
    pool.reserved[d] -= reserved[d];
    pool.spent[d] += actual[d] ?? 0;
  }
}

/** UTF-8 length of a string: an upper bound on its tokens under a byte-level BPE tokenizer (every token is at least one byte). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export function costUsd(inputTokens: number, outputTokens: number, prices: { inputUsdPerMTok: number; outputUsdPerMTok: number }): number {
  return (inputTokens * prices.inputUsdPerMTok + outputTokens * prices.outputUsdPerMTok) / 1_000_000;
}
