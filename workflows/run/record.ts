import { CancellationScope, condition, getExternalWorkflowHandle, log, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { carriesIndex, runIndex, seenAtStart } from '../../src/core/run-index';
import { runEndedSignal } from '../../src/core/messages';
import {
  MAX_DELIVERY_IDS_INDEXED,
  WakeAbsorbedEventKeys,
  WakeAttempts,
  WakeCostUsd,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeTerminalReason,
  WakeVersion,
  WakeEffects,
  WakeTokens,
} from '../../src/core/search-attributes';
import type { RunEnded } from '../../src/core/coalesce-types';
import type { AbsorbedEvent, BudgetUsage, KillRequest, ResumedHold, RunOrigin, TerminalReason, RunInput, RunResult } from '../../src/core/run-types';
import type { HoldRecord } from '../../src/core/supervisor-types';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import { SteerInbox } from './steer';
import { workflowNow } from '../shared/clock';

type Batch = Extract<RunOrigin, { kind: 'batch' }>;

/**
 * What a run records about itself while it is open: the deliveries and events it saw, who killed
 * or superseded it, its hold; its search attributes; and its result. The messages that change it
 * (delivery, skipped, supersede, kill, approve, reject, status) are handled in record-messages.ts.
 * The run workflow (workflow.ts) does the work; this is its record.
 */
export class RunRecord {
  readonly deliveryIds: string[];
  absorbed: AbsorbedEvent[];
  readonly skipped: AbsorbedEvent[];
  skippedOverflow: number;
  deliveryCount: number;
  supersededBy?: string;
  /** The agent's version the run is pinned to, once its first activity said (WakeVersion at its end; a kill of another version passes it by). */
  agentVersion?: string;
  killedBy?: KillRequest;
  haltedBeforeWork?: KillRequest;
  readonly held: { record?: HoldRecord; heldAtMs?: number; waitMs?: number } = {};
  done = false;
  /** Set by a message that changed what the run indexes; the index loop (`index`) clears it. */
  indexDirty = false;
  /** The coalescer's batch, for a coalesced run. */
  readonly batch: Batch | undefined;
  /** Overlap `steer`: events sent into the live run, for its model's next turn. */
  readonly steer: SteerInbox;
  /** A coalesced run asked to report its end (`reportEnd`): the coalescer's ID to report it to. */
  reportEndTo?: string;
  /** Its end, once its outcome is known (a coalesced run): what `reportEnd` sends. */
  private end?: RunEnded;
  private reported = false;
  /**
   * Whether the run indexes itself (search attributes): not a `wakegate shadow` session's run (no query
   * of runs is about it); a live shadow does, as `<agent>/shadow` (its spend, `wakegate shadow report`).
   */
  private readonly indexed: boolean;

  constructor(
    readonly input: RunInput,
    readonly state: RunState,
  ) {
    const resumed = input.resumedHold;
    this.batch = input.origin.kind === 'batch' ? input.origin : undefined;
    this.indexed = input.origin.kind !== 'shadow' || input.origin.live === true;
    // A coalesced run holds the deliveries of every event it took (a webhook's, a queue message's, a
    // tick's), not only the first of the event that opened its batch: the first ids and the newest, all counted.
    const seen = seenAtStart(input);
    this.deliveryIds = [...seen.deliveryIds];
    this.absorbed = resumed?.absorbed
      ? resumed.absorbed.map((e) => ({ ...e, deliveryIds: [...e.deliveryIds] }))
      : (this.batch?.absorbed ?? []).map(({ payload: _payload, ...e }) => ({ ...e, deliveryIds: [...e.deliveryIds] }));
    this.skipped = resumed ? [...resumed.skipped] : [];
    this.skippedOverflow = resumed?.skippedOverflow ?? 0;
    this.deliveryCount = seen.deliveryCount;
    this.steer = new SteerInbox(resumed?.steered);
    this.reportEndTo = resumed?.reportEndTo;
  }

  usage(): BudgetUsage | undefined {
    const pool = this.state.pool;
    return pool && { ...pool.spent, costUsd: Math.round(pool.spent.costUsd * 1e6) / 1e6, wallClockMs: workflowNow() - this.state.startedAtMs };
  }

  /**
   * The run's index (search attributes). Its starter gives it at the start (src/core/run-index.ts
   * `startIndex`: the gate, the coalescer, a replay or restart, a folded window, a live shadow), which
   * costs no action; a run that does not carry it (a window its Schedule started, whose event key is
   * its nominal time; a start by an older process) indexes itself in its first workflow task. Then
   * again after each burst of redeliveries (many signals in one activation are indexed once; a
   * cancelled run still records them).
   */
  index(): void {
    if (!this.indexed) return;
    const index = runIndex(this.input, this);
    if (!carriesIndex(workflowInfo().typedSearchAttributes, index)) upsertSearchAttributes(index);
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
        ...(this.agentVersion ? [{ key: WakeVersion, value: this.agentVersion }] : []),
        { key: WakeEffects, value: this.state.effects.length },
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
      ...(this.agentVersion ? { agentVersion: this.agentVersion } : {}),
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
      ...(batch && this.steer.droppedEvents.length ? { unseenEvents: this.steer.droppedEvents } : {}),
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
      ...(this.reportEndTo ? { reportEndTo: this.reportEndTo } : {}),
    };
  }

  /**
   * A coalesced run's end is known (its outcome recorded): reported to its coalescer by signal only
   * when asked (`reportEnd`: its coalescer continued as new, or a new chain adopted it), or when the
   * run failed (a failed child's result carries no facts: which steered events its model saw, whether
   * it began committing). The coalescer execution that started it learns the rest from the child's
   * result, which carries the same facts (src/core/run-end.ts). A run asked after its end is known
   * reports from the handler ({@link reportEnd}); the run waits for its handlers before it closes.
   */
  async ended(terminalReason: TerminalReason, always = false): Promise<void> {
    const batch = this.batch;
    if (!batch) return;
    this.closeSteer();
    this.end = {
      runKey: this.input.runKey,
      terminalReason,
      seen: this.steer.given,
      ...(this.steer.droppedEvents.length ? { unseenEvents: this.steer.droppedEvents as RunEnded['unseenEvents'] } : {}),
      ...(this.state.commitBegan ? { commitBegan: true } : {}),
    };
    if (always) this.reportEndTo ??= batch.coalescerId;
    await this.reportEnd();
  }

  /**
   * Report the run's end to the coalescer that asked (once), if it is known and was asked for; else
   * nothing yet (the run's end reports it). Awaited before the run closes: Temporal drops a signal
   * whose sender has closed by the time it is delivered. A coalescer that is gone has nothing left to
   * start, so a failure to deliver is ignored.
   *
   * The ask may reach a run that is completing: its completion is then refused by the server (a new
   * event came during its last workflow task) and the task runs again with the ask. Signals come
   * first in an activation (the SDK orders a task's signal jobs before the resolutions of its
   * activities and timers), so the handler runs before the last step resolves, and the end reports
   * it; an ask that comes after the end is known (the run is in its last steps) is answered by the
   * handler itself. One that comes after the run closed is refused: its coalescer takes the end from
   * the child's result.
   */
  async reportEnd(): Promise<void> {
    const to = this.reportEndTo;
    if (!to || !this.end || this.reported) return;
    this.reported = true;
    const end = this.end;
    const signal = () => getExternalWorkflowHandle(to).signal(runEndedSignal, end);
    await CancellationScope.nonCancellable(signal).catch(() => undefined);
  }
}
