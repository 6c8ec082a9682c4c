import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { supervisorId } from '../core/ids';
import { configureUpdate, wakesSignal } from '../core/supervisor-messages';
import type { RunVerdict, SupervisorMemo, SupervisorPolicy, WakeCounts } from '../core/supervisor-types';
import type { supervisorWorkflow } from '../../workflows/supervisor/workflow';
import { PermitLeaser, type Grant, type LeaseStats } from './permit-leaser';
import { updateWithin } from './retry';
import { capsApply } from './policy';
import { policyHash } from '../core/supervisor-policy';
import { WakeTally } from './wake-tally';
import { untraced } from '../tracing/spans';
import { SUPERVISOR_PRIORITY } from '../core/priority';

export interface SupervisorLinkOptions {
  client: Client;
  taskQueue: string;
  /** The policy this process was deployed with (it starts the supervisor if nobody has). */
  policy: SupervisorPolicy;
  /** How old a cached memo may be before a read refreshes it, ms (default 500). */
  cacheMs?: number;
  /** How long wake counts gather before they are sent, ms (default 250). */
  flushMs?: number;
  /** How long permit requests gather before one lease asks for them all, ms (default 10). */
  leaseGatherMs?: number;
  /**
   * How long permits leased ahead of demand are kept for this process's runs before what is unused
   * goes back to the supervisor, ms (default 30,000; at most a twentieth of a cap's window and
   * MAX_HOLD_MS). The prefetch is sized from the demand over as long, so a steady stream pays about
   * one lease and one return per hold, not one per few runs.
   */
  leaseTtlMs?: number;
}

export type { Grant, LeaseStats };
export { processLeaseStats } from './permit-leaser';

/** A run held on a cap re-checks when the window can have slid, but at least this often (a raised cap, a nudge lost). */
const MAX_CAP_RECHECK_MS = 15 * 60_000;

const ARMED: SupervisorMemo = { mode: 'armed', capsFull: [], releases: [] };
/** How long a background read or a send of wake counts may take, retries included (bounded, so `close` is). */
const READ_DEADLINE_MS = 5_000;
/** How long bringing the supervisor this process's policy may take, tries included. */
const CONFIGURE_DEADLINE_MS = 30_000;
const FLUSH_DEADLINE_MS = 10_000;

/**
 * One process's line to the supervisor, built so that the supervisor is never one hot workflow on
 * every event's path:
 * - reads go to the supervisor's memo through `describe` (answered by the history service, no
 *   worker needed), cached for `cacheMs` and refreshed in the background while in use: the gate
 *   pays a map lookup per event;
 * - the wakes the gate admits that start a run are counted here and sent as one signal per `flushMs` while they come
 *   briskly, else per QUIET_FLUSH_MS (./wake-tally.ts; signal-with-start, so the first one brings
 *   the supervisor up);
 * - a starting run takes its permit from this process's local stock, with no Temporal call; when
 *   the stock is short, one `lease` update asks for the runs waiting and a block ahead of demand,
 *   at most one in flight per process (./permit-leaser.ts). Unused permits go back.
 * The gate uses the first two, the runs' first step the third and a fresh read.
 */
export class SupervisorLink {
  readonly workflowId: string;
  readonly policy: SupervisorPolicy;
  private readonly client: Client;
  private readonly taskQueue: string;
  private readonly cacheMs: number;
  private readonly flushMs: number;
  private readonly permits: PermitLeaser;
  private cached?: { memo: SupervisorMemo; atMs: number };
  private refreshing?: Promise<SupervisorMemo>;
  private counts = new Map<string, number>();
  /** When the newest wake counted was admitted: sent with the counts (the supervisor watches its run from then). */
  private lastWakeAtMs = 0;
  private flushTimer?: NodeJS.Timeout;
  private flushDueMs = 0;
  private readonly tally: WakeTally;
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(opts: SupervisorLinkOptions) {
    this.client = opts.client;
    this.taskQueue = opts.taskQueue;
    this.policy = opts.policy;
    this.workflowId = supervisorId(opts.taskQueue);
    this.cacheMs = opts.cacheMs ?? 500;
    this.flushMs = opts.flushMs ?? 250;
    this.tally = new WakeTally({ storm: opts.policy.storm, flushMs: this.flushMs });
    this.permits = new PermitLeaser({
      client: this.client,
      workflowId: this.workflowId,
      policy: this.policy,
      gatherMs: opts.leaseGatherMs ?? 10,
      holdMs: opts.leaseTtlMs ?? 30_000,
      ensure: () => this.ensure(false),
    });
  }

  /** What this link saw of its leases: updates sent, in-flight-limit refusals, permits from stock, handed back. */
  get stats(): Readonly<LeaseStats> {
    return this.permits.stats;
  }

  /**
   * The supervisor's memo, at most `maxAgeMs` old when it is awaited; a cached one a little older
   * is returned at once while a refresh runs (the gate's read). No supervisor yet: armed.
   */
  async memo(maxAgeMs = this.cacheMs, opts: { wait?: boolean } = {}): Promise<SupervisorMemo> {
    const age = this.cached ? Date.now() - this.cached.atMs : Infinity;
    if (age <= maxAgeMs) return this.cached!.memo;
    const refresh = (this.refreshing ??= this.read().finally(() => (this.refreshing = undefined)));
    if (this.cached && !opts.wait && age <= maxAgeMs * 4) {
      refresh.catch(() => undefined);
      return this.cached.memo;
    }
    // The gate does not fail on a read it cannot make: Temporal's own start answers for an
    // unreachable server, and the run re-reads the memo at its first step (`wait`), which does fail.
    return opts.wait ? refresh : refresh.catch(() => this.cached?.memo ?? ARMED);
  }

  private async read(): Promise<SupervisorMemo> {
    let memo = ARMED;
    try {
      const handle = this.client.workflow.getHandle(this.workflowId);
      const desc = await untraced(() => this.client.withDeadline(Date.now() + READ_DEADLINE_MS, () => handle.describe()));
      memo = (desc.memo?.supervisor as SupervisorMemo | undefined) ?? ARMED;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    // Halted or draining: no run may start on a permit from stock; the stock goes back (./permit-leaser.ts).
    this.permits.noteMode(memo.mode);
    this.cached = { memo, atMs: Date.now() };
    return memo;
  }

  /** Count one wake of `agent` that the gate answered with a run started (`startsRun`; sent with the next counts). */
  noteWake(agent: string): void {
    this.counts.set(agent, (this.counts.get(agent) ?? 0) + 1);
    const nowMs = Date.now();
    this.lastWakeAtMs = nowMs;
    this.tally.note(agent, nowMs);
    // Already going within a round: nothing to weigh (the gate's path at a brisk rate).
    if (this.flushTimer && this.flushDueMs <= nowMs + this.flushMs) return;
    // Sent after the tally's delay; a timer set for later goes sooner once wakes come briskly.
    const dueMs = nowMs + this.tally.delayMs(nowMs);
    if (this.flushTimer && this.flushDueMs <= dueMs) return;
    clearTimeout(this.flushTimer);
    this.flushDueMs = dueMs;
    this.flushTimer = setTimeout(() => void this.flush().catch(() => undefined), dueMs - nowMs).unref();
  }

  /** Send the counted wakes now (one signal-with-start). */
  flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.counts.size) return this.flushing;
    const counts = Object.fromEntries(this.counts);
    const lastAtMs = this.lastWakeAtMs;
    this.counts.clear();
    this.flushing = this.flushing.then(async () => {
      try {
        await untraced(() =>
          this.client.withDeadline(Date.now() + FLUSH_DEADLINE_MS, () =>
            this.client.workflow.signalWithStart<typeof supervisorWorkflow, [WakeCounts]>('supervisorWorkflow', {
              workflowId: this.workflowId,
              taskQueue: this.taskQueue,
              args: [{ taskQueue: this.taskQueue, policy: this.policy }],
              signal: wakesSignal,
              signalArgs: [{ counts, lastAtMs }],
              priority: SUPERVISOR_PRIORITY,
            }),
          ),
        );
      } catch {
        // Temporal did not take the counts: count them again with the next send (none after close).
        if (this.closed) return;
        for (const [a, n] of Object.entries(counts)) this.counts.set(a, (this.counts.get(a) ?? 0) + n);
        this.flushTimer ??= setTimeout(() => void this.flush().catch(() => undefined), this.flushMs * 4).unref();
      }
    });
    return this.flushing;
  }

  /** Start the supervisor if it is not running and bring it this process's policy (workers do, on their first run). */
  async ensure(configure: boolean): Promise<void> {
    return untraced(() => this.startAndConfigure(configure));
  }

  private async startAndConfigure(configure: boolean): Promise<void> {
    await this.client.workflow.start<typeof supervisorWorkflow>('supervisorWorkflow', {
      workflowId: this.workflowId,
      taskQueue: this.taskQueue,
      args: [{ taskQueue: this.taskQueue, policy: this.policy }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      priority: SUPERVISOR_PRIORITY,
    });
    if (!configure) return;
    const handle = this.client.workflow.getHandle(this.workflowId);
    // The supervisor holds this policy already (its memo says so; a describe is no billable action): no update.
    const held = await this.client
      .withDeadline(Date.now() + READ_DEADLINE_MS, () => handle.describe())
      .then((d) => (d.memo?.supervisor as SupervisorMemo | undefined)?.policyHash)
      .catch(() => undefined);
    if (held !== undefined && held === policyHash(this.policy)) return;
    // A supervisor whose workflow task is failing (a worker that held it was killed) or that no
    // worker polls takes no update for a while: try again within a bound, never wait forever.
    const deadlineMs = Date.now() + CONFIGURE_DEADLINE_MS;
    await updateWithin(deadlineMs, () => this.client.withDeadline(deadlineMs, () => handle.executeUpdate(configureUpdate, { args: [this.policy] })));
  }

  /** One permit for a run of `agent`: from this process's stock, or with the next lease. */
  lease(agent: string): Promise<Grant> {
    return this.permits.lease(agent);
  }

  /**
   * What a run's first step (or a held run's re-check) does: run, hold, or end discarded. A run held
   * `halted` waits for a person's release or discard recorded after it was held; one held `cap`
   * runs as soon as a permit is granted. A re-check the supervisor nudged (a release or a discard was
   * just recorded) reads the supervisor afresh: a cached read from before it would miss it.
   */
  async runVerdict(agent: string, held?: { hold: 'halted' | 'cap'; heldAtMs: number; nudged?: boolean }): Promise<RunVerdict> {
    const memo = await this.memo(held?.nudged ? 0 : this.cacheMs / 2, { wait: true });
    const recheckMs = this.policy.holdRecheckMs;
    // A person's release lets a run go past a halt, never past a cap: it still takes its permit.
    let releasedBy: { who: string; reason: string } | undefined;
    if (held) {
      // The latest decision counts (a discard after a release reaches a run still waiting on a cap).
      const decided = [...memo.releases].reverse().find((r) => r.atMs >= held.heldAtMs && (!r.agent || r.agent === agent));
      if (decided?.action === 'discard') return { kind: 'discard', who: decided.who, reason: decided.reason };
      if (decided) releasedBy = { who: decided.who, reason: decided.reason };
      // Held on a halt that a person had already reset (a stale read): it needs no release.
      const staleHold = held.hold === 'halted' && memo.mode === 'armed' && (memo.armedSinceMs ?? 0) <= held.heldAtMs;
      if (!decided && held.hold === 'halted' && !staleHold) return { kind: 'hold', hold: 'halted', reason: haltReason(memo), recheckMs };
    }
    const run: RunVerdict = releasedBy ? { kind: 'run', releasedBy } : { kind: 'run' };
    if (memo.mode !== 'armed') return { kind: 'hold', hold: 'halted', reason: haltReason(memo), recheckMs };
    if (!capsApply(this.policy, agent)) return run;
    const grant = await this.lease(agent);
    if (grant.granted) return run;
    if (grant.mode !== 'armed')
      return { kind: 'hold', hold: 'halted', reason: `the supervisor is ${grant.mode}; a person resets it and releases held wakes`, recheckMs };
    // Re-checked when the window can have slid (not every holdRecheckMs): a long cap hold adds little to the run's history.
    const capRecheckMs = grant.retryAfterMs === undefined ? recheckMs : Math.min(MAX_CAP_RECHECK_MS, Math.max(recheckMs, grant.retryAfterMs + 250));
    return {
      kind: 'hold',
      hold: 'cap',
      reason: `${agent} is over a rolling cap (wakegate supervisor status); it runs when the window slides`,
      recheckMs: capRecheckMs,
    };
  }

  /**
   * Send what is counted, stop the timers and wait for a background read: nothing of this link
   * is left on its client's connection, which the caller may close next.
   */
  async close(): Promise<void> {
    this.closed = true;
    const pending = Promise.all([this.flush().catch(() => undefined), this.refreshing?.catch(() => undefined), this.permits.close()]);
    // Bounded whatever happens to the client (a call on a closed connection may never settle).
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([pending, new Promise((r) => (bound = setTimeout(r, FLUSH_DEADLINE_MS + 1000)))]);
    clearTimeout(bound);
    clearTimeout(this.flushTimer);
  }
}

function haltReason(memo: SupervisorMemo): string {
  return memo.mode === 'armed'
    ? 'held while the supervisor was halted: a person releases it (wakegate supervisor release --who --reason)'
    : `the supervisor is ${memo.mode} (trip #${memo.tripId}: ${memo.tripReason}); a person resets it and releases held wakes`;
}
