import { CancellationScope, condition, getExternalWorkflowHandle, log, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import {
  approveSignal,
  deliverySignal,
  killUpdate,
  rejectSignal,
  runEndedSignal,
  skippedSignal,
  statusQuery,
  steerUpdate,
  supersedeSignal,
} from '../../src/core/messages';
import {
  MAX_DELIVERY_IDS_INDEXED,
  WakeAbsorbedEventKeys,
  WakeKey,
  WakeAgent,
  WakeAttempts,
  WakeCostUsd,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeEntity,
  WakeEventKey,
  WakeEventType,
  WakeOccurredAt,
  WakeSource,
  WakeTerminalReason,
  WakeTokens,
} from '../../src/core/search-attributes';
import type { RunEnded } from '../../src/core/coalesce-types';
import type {
  AbsorbedEvent,
  ApprovalDecision,
  BudgetUsage,
  KillRequest,
  ResumedHold,
  RunOrigin,
  TerminalReason,
  RunInput,
  RunResult,
} from '../../src/core/run-types';
import type { HoldRecord } from '../../src/core/supervisor-types';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import { NOT_YET_WORKING } from './hold';
import { SteerInbox } from './steer';
import { workflowNow } from '../shared/clock';

/** Events listed on a run's result and status (the rest are counted). */
const MAX_SKIPPED_LISTED = 1000;

type Batch = Extract<RunOrigin, { kind: 'batch' }>;

/**
 * What a run records about itself while it is open: the deliveries and events it saw, who killed
 * or superseded it, its hold; the messages that change them (delivery, skipped, supersede, kill,
 * approve, reject, status); its search attributes; and its result. The run workflow (workflow.ts)
 * does the work; this is its record.
 */
export class RunRecord {
  readonly deliveryIds: string[];
  absorbed: AbsorbedEvent[];
  readonly skipped: AbsorbedEvent[];
  skippedOverflow: number;
  deliveryCount: number;
  supersededBy?: string;
  killedBy?: KillRequest;
  haltedBeforeWork?: KillRequest;
  readonly held: { record?: HoldRecord; heldAtMs?: number; waitMs?: number } = {};
  done = false;
  private indexDirty = false;
  /** The coalescer's batch, for a coalesced run. */
  readonly batch: Batch | undefined;
  /** Overlap `steer`: events sent into the live run, for its model's next turn. */
  readonly steer: SteerInbox;
  /**
   * Whether the run indexes itself (search attributes): not a `wakegate shadow` session's run (no query
   * of runs is about it); a live shadow does, as `<agent>/shadow` (its spend, `wakegate shadow report`).
   */
  private readonly indexed: boolean;

  constructor(
    private readonly input: RunInput,
    private readonly state: RunState,
  ) {
    const resumed = input.resumedHold;
    this.batch = input.origin.kind === 'batch' ? input.origin : undefined;
    this.indexed = input.origin.kind !== 'shadow' || input.origin.live === true;
    // A coalesced run holds every delivery of every event it took (a webhook's, a queue message's, a
    // tick's), not only the first of the event that opened its batch.
    const delivered = this.batch ? this.batch.absorbed.flatMap((e) => e.deliveryIds) : input.deliveryId ? [input.deliveryId] : [];
    this.deliveryIds = resumed ? [...resumed.deliveryIds] : [...new Set(delivered)];
    this.absorbed = resumed?.absorbed
      ? resumed.absorbed.map((e) => ({ ...e, deliveryIds: [...e.deliveryIds] }))
      : (this.batch?.absorbed ?? []).map(({ payload: _payload, ...e }) => ({ ...e, deliveryIds: [...e.deliveryIds] }));
    this.skipped = resumed ? [...resumed.skipped] : [];
    this.skippedOverflow = resumed?.skippedOverflow ?? 0;
    this.deliveryCount = resumed?.deliveryCount ?? Math.max(1, delivered.length);
    this.steer = new SteerInbox(resumed?.steered);
  }

  usage(): BudgetUsage | undefined {
    const pool = this.state.pool;
    return pool && { ...pool.spent, costUsd: Math.round(pool.spent.costUsd * 1e6) / 1e6, wallClockMs: workflowNow() - this.state.startedAtMs };
  }

  /** The run's messages. A kill cancels `scope`; a halt before the run's work holds it instead. */
  listen(scope: CancellationScope): void {
    const { input, state } = this;
    const seen = new Set(this.deliveryIds);
    setHandler(deliverySignal, (notice) => {
      const mine = notice.eventKey ? this.absorbed.find((e) => e.eventKey === notice.eventKey) : undefined;
      if (mine) for (const id of notice.deliveryIds) if (!mine.deliveryIds.includes(id)) mine.deliveryIds.push(id);
      for (const id of notice.deliveryIds) {
        this.deliveryCount += 1;
        if (!seen.has(id)) {
          seen.add(id);
          this.deliveryIds.push(id);
        }
      }
      this.indexDirty = true;
    });
    setHandler(skippedSignal, ({ events }) => {
      // The payloads stay in the signal, in history, for a replay; the run's record and result keep none.
      for (const { payload: _p, ...e } of events) {
        if (this.skipped.length < MAX_SKIPPED_LISTED) this.skipped.push(e);
        else this.skippedOverflow += 1;
      }
    });
    setHandler(
      steerUpdate,
      ({ events }) => {
        const keys = events.map((e) => e.eventKey);
        // A one-call run has no coalescer; a finished one (or one past its commit decision) takes no more.
        const fresh = this.batch && !this.done ? this.steer.take(events, (k) => this.absorbed.some((e) => e.eventKey === k)) : undefined;
        if (!fresh) return { accepted: [], refused: keys };
        for (const { payload: _p, ...e } of fresh) {
          this.absorbed.push({ ...e, deliveryIds: [...e.deliveryIds] });
          this.deliveryCount += e.deliveryIds.length;
          for (const id of e.deliveryIds.filter((d) => !seen.has(d))) {
            seen.add(id);
            this.deliveryIds.push(id);
          }
        }
        this.indexDirty = true;
        return { accepted: keys, refused: [] };
      },
      {
        validator: (arg: { events?: { eventKey?: string }[] }) => {
          if (!Array.isArray(arg?.events) || arg.events.some((e) => !e?.eventKey)) throw new Error('steer needs events, each with an eventKey');
        },
      },
    );
    // Overlap `cancel`: the coalescer restarts on the newest state. A run that has begun its commit
    // stage is let finish (its effects are not redone under the restart's effect keys): its end says
    // so, and the restart drops the events it carried.
    setHandler(supersedeSignal, ({ by }) => {
      if (this.done || state.commitBegan) return;
      this.supersededBy = by;
      scope.cancel();
    });
    setHandler(statusQuery, () => ({
      runKey: input.runKey,
      eventKey: input.eventKey,
      agent: input.agent,
      wakeKey: input.wakeKey,
      absorbed: this.absorbed,
      skipped: this.skipped,
      ...(this.steer.taken.length ? { steered: this.steer.taken } : {}),
      phase: state.phase,
      deliveryIds: this.deliveryIds,
      deliveryCount: this.deliveryCount,
      usage: this.usage(),
      awaitingApproval: state.approval.pending,
      ...(this.held.record ? { held: this.held.record } : {}),
    }));
    setHandler(
      killUpdate,
      (req) => {
        if (req.halt && NOT_YET_WORKING.has(state.phase)) {
          this.haltedBeforeWork = req;
          return { accepted: true, phase: state.phase, held: true };
        }
        this.killedBy = req;
        scope.cancel();
        return { accepted: true, phase: state.phase };
      },
      {
        validator: (req) => {
          if (this.done) throw new Error('the run has already finished');
          if (!req?.who || !req?.reason) throw new Error('kill needs who and reason');
        },
      },
    );
    // The first decision wins; one for another effect key than the waiting one is ignored. It may
    // arrive before the wait begins (same workflow task): the commit stage keeps it.
    const decide = (approved: boolean) => (d: ApprovalDecision) => {
      if (this.done || state.approval.decision || !d?.who) return;
      const pending = state.approval.pending;
      if (pending && d.effectKey && d.effectKey !== pending.effectKey) return;
      state.approval.decision = { approved, who: d.who, reason: d.reason };
    };
    setHandler(approveSignal, decide(true));
    setHandler(rejectSignal, decide(false));
  }

  /**
   * The gate's start carries no search attributes (each one makes the start write heavier); the run
   * indexes itself in its first workflow task, and again after each burst of redeliveries (many
   * signals in one activation are indexed once; a cancelled run still records them).
   */
  index(): void {
    const { input } = this;
    if (!this.indexed) return;
    upsertSearchAttributes([
      { key: WakeEventKey, value: input.eventKey },
      { key: WakeSource, value: input.source },
      { key: WakeEntity, value: input.entity },
      { key: WakeEventType, value: input.type },
      { key: WakeAgent, value: input.agent },
      { key: WakeKey, value: input.wakeKey },
      { key: WakeOccurredAt, value: new Date(input.occurredAt) },
      ...(this.absorbed.length ? [{ key: WakeAbsorbedEventKeys, value: this.absorbed.slice(0, MAX_DELIVERY_IDS_INDEXED).map((e) => e.eventKey) }] : []),
      { key: WakeDeliveryIds, value: this.deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
      { key: WakeDeliveryCount, value: this.deliveryCount },
    ]);
    void CancellationScope.nonCancellable(async () => {
      for (;;) {
        await condition(() => this.indexDirty);
        this.indexDirty = false;
        upsertSearchAttributes([
          // Events steered into the run are indexed as it took them (the gate finds a run by them).
          ...(this.steer.taken.length ? [{ key: WakeAbsorbedEventKeys, value: this.absorbed.slice(0, MAX_DELIVERY_IDS_INDEXED).map((e) => e.eventKey) }] : []),
          { key: WakeDeliveryIds, value: this.deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
          { key: WakeDeliveryCount, value: this.deliveryCount },
        ]);
      }
    });
  }

  /** The terminal reason and what was spent, indexed and logged. */
  record(terminalReason: TerminalReason): BudgetUsage | undefined {
    const u = this.usage();
    if (this.indexed)
      upsertSearchAttributes([
        { key: WakeTerminalReason, value: terminalReason },
        { key: WakeDeliveryIds, value: this.deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
        { key: WakeDeliveryCount, value: this.deliveryCount },
        { key: WakeAttempts, value: this.state.maxAttempt },
        ...(u
          ? [
              { key: WakeTokens, value: u.tokens },
              { key: WakeCostUsd, value: u.costUsd },
            ]
          : []),
      ]);
    const { runKey, eventKey, agent, wakeKey } = this.input;
    log.info('run finished', {
      runKey,
      eventKey,
      agent,
      wakeKey,
      terminalReason,
      deliveryIds: this.deliveryIds,
      deliveryCount: this.deliveryCount,
      absorbed: this.absorbed.length + (this.batch?.absorbedOverflow ?? 0),
      skipped: this.skipped.length + this.skippedOverflow,
      attempts: this.state.maxAttempt,
      usage: u,
    });
    return u;
  }

  /**
   * Overlap `steer`: the run takes no more steered events; those its model was never given leave its
   * list of absorbed events (and its index) for the follow-up run. Called at every end.
   */
  closeSteer(): void {
    const unseen = new Set(this.steer.close());
    if (!unseen.size) return;
    this.absorbed = this.absorbed.filter((e) => !unseen.has(e.eventKey));
    this.indexDirty = true;
  }

  /** The run's result from its outcome; the run is done. */
  finish(o: RunOutcome): RunResult {
    this.closeSteer();
    this.done = true;
    this.state.phase = 'done';
    const u = this.record(o.reason);
    const { runKey, eventKey, agent, wakeKey } = this.input;
    const batch = this.batch;
    return {
      runKey,
      eventKey,
      agent,
      wakeKey,
      terminalReason: o.reason,
      summary: o.summary,
      deliveryIds: this.deliveryIds,
      deliveryCount: this.deliveryCount,
      output: o.output,
      attempts: this.state.maxAttempt,
      ...(u ? { usage: u } : {}),
      ...(this.killedBy ? { killedBy: this.killedBy } : {}),
      ...(batch ? { absorbed: this.absorbed, ...(batch.absorbedOverflow ? { absorbedOverflow: batch.absorbedOverflow } : {}) } : {}),
      ...(batch ? { skipped: this.skipped, ...(this.skippedOverflow ? { skippedOverflow: this.skippedOverflow } : {}) } : {}),
      ...(this.steer.given.length ? { steered: this.steer.given } : {}),
      ...(this.state.commitBegan ? { commitBegan: true } : {}),
      ...(this.supersededBy ? { supersededBy: this.supersededBy } : {}),
      ...(this.held.record ? { held: this.held.record } : {}),
      ...(this.state.tools ? { shadowTools: this.state.tools } : {}),
    };
  }

  /** What a held run carries into its next run when it continues as new. */
  resumedHold(record: HoldRecord): ResumedHold {
    const { held } = this;
    return {
      record,
      heldAtMs: held.heldAtMs!,
      waitMs: held.waitMs!,
      deliveryIds: this.deliveryIds,
      deliveryCount: this.deliveryCount,
      skipped: this.skipped,
      skippedOverflow: this.skippedOverflow,
      ...(this.batch ? { absorbed: this.absorbed } : {}),
      ...(this.steer.taken.length ? { steered: this.steer.carried() } : {}),
    };
  }

  /**
   * A coalesced run tells its coalescer it has ended, so the next batch may start. Awaited before the
   * run closes: Temporal drops a signal whose sender has closed by the time it is delivered. A
   * coalescer that is gone has nothing left to start, so a failure to deliver is ignored.
   */
  async tellCoalescer(terminalReason: TerminalReason): Promise<void> {
    const batch = this.batch;
    if (!batch) return;
    this.closeSteer();
    const ended = {
      runKey: this.input.runKey,
      terminalReason,
      seen: this.steer.given,
      ...(this.steer.droppedEvents.length ? { unseenEvents: this.steer.droppedEvents as RunEnded['unseenEvents'] } : {}),
      ...(this.state.commitBegan ? { commitBegan: true } : {}),
    };
    const signal = () => getExternalWorkflowHandle(batch.coalescerId).signal(runEndedSignal, ended);
    await CancellationScope.nonCancellable(signal).catch(() => undefined);
  }
}
