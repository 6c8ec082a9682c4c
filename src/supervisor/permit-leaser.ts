import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import { capsFor } from '../core/caps';
import { MAX_HOLD_MS, MAX_PREFETCH, type LeaseAnswer, type LeaseRequest } from '../core/permit-types';
import type { SupervisorMode, SupervisorPolicy } from '../core/supervisor-types';
import { untraced } from '../tracing/spans';
import { PermitCalls } from './permit-calls';
import { PermitStock, type Unused } from './permit-stock';

/** One permit asked for: granted or not, and the breaker's mode when it was answered. */
export interface Grant {
  granted: boolean;
  mode: SupervisorMode;
  /** Not granted: the soonest a permit can free up, ms from the answer (the cap's window slides). */
  retryAfterMs?: number;
}

/** What the link saw of its leases, for a benchmark and for status. */
export interface LeaseStats {
  /** `lease` updates sent (each try counts). */
  leaseUpdates: number;
  /** Tries that Temporal refused because 10 updates were already in flight on the supervisor. */
  inFlightRefusals: number;
  /** Tries that failed for a passing reason and were made again. */
  leaseRetries: number;
  /** Permits taken from the local stock, with no Temporal call. */
  fromStock: number;
  /** Prefetched permits handed back unused. */
  returned: number;
}

/** Every link's counts in this process together (a benchmark's worker leases through links it does not hold). */
const processStats: LeaseStats = { leaseUpdates: 0, inFlightRefusals: 0, leaseRetries: 0, fromStock: 0, returned: 0 };

/** What every link of this process saw of its leases, summed (`link.stats` is one link's). */
export const processLeaseStats = (): Readonly<LeaseStats> => ({ ...processStats });

/**
 * The permit half of a process's line to the supervisor (./link.ts): a run takes its permit from
 * the local stock when there is one, with no Temporal call at all. When the stock is short, the
 * runs waiting are asked for in ONE `lease` update, with a prefetch sized from recent demand; at
 * most one lease is in flight per process (runs arriving meanwhile wait for the next). What is
 * prefetched is counted in the supervisor's windows at once and handed back (`unusedPermits`, one
 * signal per block) when its hold ends unused, when the supervisor halts, and on close.
 *
 * Temporal's limits this keeps inside: 10 updates in flight per workflow (one per process, and
 * most runs need none), 2,000 updates per workflow run (the supervisor continues as new before).
 * A try refused for the in-flight limit, or failing for any passing reason, is made again with a
 * jittered backoff within LEASE_DEADLINE_MS (on a connection of the link's own), under the same update ID (a try the server did take
 * is answered with its first outcome, not counted twice); only a failure that outlasts it, or a
 * refusal by the supervisor itself, fails the runs waiting. The calls themselves are permit-calls.ts's.
 */
export class PermitLeaser {
  /** This process's name as a holder of permits (unique per link). */
  readonly holder = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  readonly stats: LeaseStats = { leaseUpdates: 0, inFlightRefusals: 0, leaseRetries: 0, fromStock: 0, returned: 0 };
  private readonly stock: PermitStock;
  private readonly now: () => number;
  /** The supervisor's mode as this process last heard it (a memo read, or a lease answer sent since), and how often it was told. */
  private mode: SupervisorMode = 'armed';
  private modeNotes = 0;
  private waiting = new Map<string, { resolve: (grant: Grant) => void; reject: (err: unknown) => void }[]>();
  private timer?: NodeJS.Timeout;
  private inFlight = false;
  private returnTimer?: NodeJS.Timeout;
  private readonly calls: PermitCalls;

  constructor(
    private readonly opts: {
      client: Client;
      workflowId: string;
      policy: SupervisorPolicy;
      /** How long requests gather before one lease asks for them all, ms. */
      gatherMs: number;
      /** How long prefetched permits are kept before what is unused goes back, ms. */
      holdMs: number;
      /** Start the supervisor (a lease found none). */
      ensure: () => Promise<void>;
      /** The stock's clock, epoch ms (default `Date.now`; a test's own). */
      now?: () => number;
    },
  ) {
    this.stock = new PermitStock({ demandWindowMs: opts.holdMs, maxPrefetch: MAX_PREFETCH });
    this.now = opts.now ?? Date.now;
    this.calls = new PermitCalls({
      client: opts.client,
      workflowId: opts.workflowId,
      holder: this.holder,
      ensure: opts.ensure,
      count: (what, n) => this.count(what, n),
    });
  }

  /**
   * One permit for a run of `agent`: from the stock at once, or with the next lease. A permit from
   * stock carries the mode this process last heard (the run's own memo read, at most the link's
   * `cacheMs / 2` old, or a later lease answer), and none is taken unless that is armed: the run
   * then asks the supervisor itself, whose answer says what it is now.
   */
  lease(agent: string): Promise<Grant> {
    const nowMs = this.now();
    this.stock.noteDemand(agent, nowMs);
    if (this.mode === 'armed' && this.stock.take(agent, nowMs)) {
      this.count('fromStock');
      return Promise.resolve({ granted: true, mode: this.mode });
    }
    return new Promise<Grant>((resolve, reject) => {
      const w = this.waiting.get(agent) ?? [];
      w.push({ resolve, reject });
      this.waiting.set(agent, w);
      this.schedule();
    });
  }

  /**
   * How long prefetched permits of `agent` may wait for a run, timed from when the lease was asked
   * for: `holdMs`, but at most a twentieth of its shortest cap window and MAX_HOLD_MS. The
   * supervisor counts a block at the end of the hold it was asked for (workflows/supervisor/blocks.ts),
   * so a run must not start on it later: the hold begins before the supervisor's lease instant,
   * never after it, whatever the answer's way back took.
   */
  holdMsFor(agent: string): number {
    const windows = capsFor(this.opts.policy, agent).map((c) => c.cap.windowMs);
    return Math.max(0, Math.min(this.opts.holdMs, MAX_HOLD_MS, ...windows.map((w) => Math.floor(w / 20))));
  }

  /**
   * The supervisor's mode as a memo read found it. Not armed: the stock is handed back, no run takes
   * a permit from stock, and a block whose lease was asked for before this is handed back as it
   * arrives (it was decided before the trip this read shows).
   */
  noteMode(mode: SupervisorMode): void {
    this.mode = mode;
    this.modeNotes++;
    if (mode !== 'armed') this.dropStock();
  }

  /** Hand the whole stock back: every run asks the supervisor again. */
  dropStock(): void {
    this.handBack(this.stock.drain());
  }

  /** Hand back the whole stock and wait (bounded) for the returns to be sent; stop the timers. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    clearTimeout(this.returnTimer);
    this.dropStock();
    await this.calls.close();
  }

  private count(what: keyof LeaseStats, n = 1): void {
    this.stats[what] += n;
    processStats[what] += n;
  }

  private schedule(): void {
    if (this.inFlight || this.timer || !this.waiting.size) return;
    this.timer = setTimeout(() => void this.send(), this.opts.gatherMs).unref();
  }

  private async send(): Promise<void> {
    this.timer = undefined;
    const waiting = this.waiting;
    this.waiting = new Map();
    const nowMs = this.now();
    const requests: Record<string, number> = {};
    const prefetch: Record<string, number> = {};
    for (const [agent, w] of waiting) {
      requests[agent] = w.length;
      const ahead = this.holdMsFor(agent) > 0 ? this.stock.prefetchFor(agent, w.length, nowMs) : 0;
      if (ahead) prefetch[agent] = ahead;
    }
    const req: LeaseRequest = Object.keys(prefetch).length
      ? { requests, prefetch, holder: this.holder, holdMs: Math.max(...Object.keys(prefetch).map((a) => this.holdMsFor(a))) }
      : { requests };
    this.inFlight = true;
    const notesAtAsk = this.modeNotes;
    let answer: LeaseAnswer;
    try {
      answer = await untraced(() => this.calls.lease(req));
    } catch (err) {
      // Not answered: every waiter's first step fails and Temporal retries the activity.
      for (const w of waiting.values()) for (const { reject } of w) reject(err);
      return;
    } finally {
      this.inFlight = false;
      this.schedule();
    }
    // The answer is the supervisor's word after every read this process made before asking: it
    // sets the mode. An answer to a lease asked before a later read does not re-arm it.
    if (answer.mode !== 'armed' || notesAtAsk === this.modeNotes) this.noteMode(answer.mode);
    const prefetched = Object.entries(answer.prefetched ?? {}).filter(([, n]) => n > 0);
    // Kept for their hold from the ask (nowMs), before the supervisor counted them, never from the answer's arrival.
    if (this.mode === 'armed') for (const [agent, n] of prefetched) this.stock.add(agent, n, answer.atMs ?? 0, nowMs, this.holdMsFor(agent));
    else this.handBack(prefetched.map(([agent, n]) => ({ agent, atMs: answer.atMs ?? 0, n })));
    this.scheduleReturn();
    for (const [agent, w] of waiting) {
      const retryAfterMs = answer.retryAfterMs?.[agent];
      w.forEach(({ resolve }, i) =>
        resolve({ granted: i < (answer.grants[agent] ?? 0), mode: answer.mode, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }),
      );
    }
    this.serveFromStock();
  }

  /** Runs that began waiting while the lease was in flight take what it brought into stock. */
  private serveFromStock(): void {
    const nowMs = this.now();
    for (const [agent, w] of this.waiting) {
      while (w.length && this.mode === 'armed' && this.stock.take(agent, nowMs)) {
        this.count('fromStock');
        w.shift()!.resolve({ granted: true, mode: this.mode });
      }
      if (!w.length) this.waiting.delete(agent);
    }
    if (!this.waiting.size) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private scheduleReturn(): void {
    const next = this.stock.nextExpiryMs();
    clearTimeout(this.returnTimer);
    if (next === undefined) return;
    this.returnTimer = setTimeout(
      () => {
        this.handBack(this.stock.expired(this.now()));
        this.scheduleReturn();
      },
      Math.max(0, next - this.now()),
    ).unref();
  }

  /** Send unused permits back (permit-calls.ts). */
  private handBack(blocks: Unused[]): void {
    this.calls.handBack(blocks);
  }
}
