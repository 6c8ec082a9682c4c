/**
 * A worker process's local stock of permits, per agent, so that a run's first step normally takes
 * its permit with no Temporal call. Pure and clock-free (every call is given `nowMs`): the link
 * (./link.ts) does the talking, this class the counting.
 *
 * - A block comes from one `lease` answer's prefetch: `n` permits the supervisor counted in its
 *   windows at `leasedAtMs` (its own clock: what a return names). It is usable until `expiresAtMs`
 *   (local clock): a permit counts in the windows from its lease, so one used much later would let
 *   runs start that the window no longer counts. What is left at expiry is handed back.
 * - Demand is what the process's runs asked for over the last `demandWindowMs`: the next lease asks
 *   for about that much ahead (the stock then covers about one hold's worth of runs), at most
 *   `maxPrefetch`; the supervisor grants at most a quarter of a cap's remaining room of it. A stream
 *   that began less than a window ago is taken at its rate so far (over at least a second) for a whole window.
 */
export interface StockBlock {
  agent: string;
  leasedAtMs: number;
  n: number;
  expiresAtMs: number;
}

/** Permits handed back: which block (by the supervisor's lease time) and how many. */
export interface Unused {
  agent: string;
  atMs: number;
  n: number;
}

/** Demand is counted in buckets of this many ms. */
const DEMAND_BUCKET_MS = 100;
/** A stream's rate is taken over at least this long, ms (two runs a moment apart are not a thousand a second). */
const MIN_RATE_SPAN_MS = 1000;

export class PermitStock {
  private readonly blocks: StockBlock[] = [];
  private readonly demand = new Map<string, [number, number][]>();

  constructor(private readonly opts: { demandWindowMs: number; maxPrefetch: number }) {}

  /** Note that a run of `agent` asked for a permit (whether the stock had one or not). */
  noteDemand(agent: string, nowMs: number): void {
    const start = nowMs - (nowMs % DEMAND_BUCKET_MS);
    const buckets = this.demand.get(agent) ?? [];
    const last = buckets[buckets.length - 1];
    if (last && last[0] === start) last[1] += 1;
    else buckets.push([start, 1]);
    this.demand.set(agent, buckets);
    this.pruneDemand(agent, nowMs);
  }

  /** Take one permit of `agent` from a live block (the oldest first); false when there is none. */
  take(agent: string, nowMs: number): boolean {
    const block = this.blocks.find((b) => b.agent === agent && b.n > 0 && b.expiresAtMs > nowMs);
    if (!block) return false;
    block.n -= 1;
    return true;
  }

  /** Permits of `agent` usable now. */
  size(agent: string, nowMs: number): number {
    return this.blocks.filter((b) => b.agent === agent && b.expiresAtMs > nowMs).reduce((sum, b) => sum + b.n, 0);
  }

  /**
   * How many permits of `agent` to ask for ahead of demand, beside the `waiting` runs: the recent
   * demand less those runs and what is in stock, at most `maxPrefetch`. A lone run now and then
   * asks for no more than itself (nothing to hand back); a steady or bursting stream for a block.
   */
  prefetchFor(agent: string, waiting: number, nowMs: number): number {
    this.pruneDemand(agent, nowMs);
    const buckets = this.demand.get(agent) ?? [];
    const recent = buckets.reduce((sum, [, n]) => sum + n, 0);
    // A stream that began less than a window ago is sized at its rate so far over a whole window, so a
    // burst is covered by its second lease rather than by leases doubling; a lone run asks for itself alone.
    const span = buckets.length ? nowMs - buckets[0]![0] : 0;
    const expected =
      recent >= 2 && span < this.opts.demandWindowMs ? Math.ceil((recent * this.opts.demandWindowMs) / Math.max(span, MIN_RATE_SPAN_MS)) : recent;
    return Math.max(0, Math.min(this.opts.maxPrefetch, expected - waiting - this.size(agent, nowMs)));
  }

  /** Stock `n` permits of `agent` leased at `leasedAtMs` (supervisor time), usable for `holdMs` from `nowMs`. */
  add(agent: string, n: number, leasedAtMs: number, nowMs: number, holdMs: number): void {
    if (n > 0) this.blocks.push({ agent, leasedAtMs, n, expiresAtMs: nowMs + holdMs });
  }

  /** Remove the blocks past their expiry: what they had left, to hand back. */
  expired(nowMs: number): Unused[] {
    return this.removeWhere((b) => b.expiresAtMs <= nowMs);
  }

  /** Remove every block (a halt, a close): what they had left, to hand back. */
  drain(): Unused[] {
    return this.removeWhere(() => true);
  }

  /** When the next block expires (local epoch ms); undefined with none. */
  nextExpiryMs(): number | undefined {
    return this.blocks.length ? Math.min(...this.blocks.map((b) => b.expiresAtMs)) : undefined;
  }

  private removeWhere(pred: (b: StockBlock) => boolean): Unused[] {
    const out: Unused[] = [];
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const b = this.blocks[i]!;
      if (!pred(b)) continue;
      this.blocks.splice(i, 1);
      if (b.n > 0) out.unshift({ agent: b.agent, atMs: b.leasedAtMs, n: b.n });
    }
    return out;
  }

  private pruneDemand(agent: string, nowMs: number): void {
    const buckets = this.demand.get(agent);
    if (!buckets) return;
    const from = buckets.findIndex(([start]) => start + DEMAND_BUCKET_MS > nowMs - this.opts.demandWindowMs);
    if (from < 0) this.demand.delete(agent);
    else if (from > 0) buckets.splice(0, from);
  }
}
