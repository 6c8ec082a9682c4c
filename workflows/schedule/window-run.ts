import { ApplicationFailure, CancellationScope, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import type { TickReport, WindowCheck, WindowTaken } from '../../src/core/schedule-types';
import { FailureType } from '../../src/core/failures';
import { eventKey, scheduleWindowRunKey } from '../../src/core/ids';
import { catchUpDecision, nominalOf, runWindowAsChild } from './window';
import { isoSeconds } from '../../src/core/time';
import type { ScheduledRunInput, ScheduledWindow, RunInput } from '../../src/core/run-types';
import type { RunOutcome } from '../../src/core/run-state';
import { startIndex } from '../../src/core/run-index';

/**
 * A schedule's window that its Temporal Schedule started directly (agents on the one-call path): the
 * run does what a tick in between would otherwise do, before the agent's first step. Temporal already
 * refuses a scheduled window's second start (REJECT_DUPLICATE on `<agent>@schedule/tick/<id>-<nominal>`)
 * and sees the run itself for its overlap policy; the run adds the catch-up policy, the ledger report
 * and the answer to a manual trigger or a backfill of a window that has already run.
 */

const { reportTick } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10 },
});

/** Whether the workflow's input is the Schedule's fixed one rather than a whole RunInput. */
export function isScheduledRun(arg: RunInput | ScheduledRunInput): arg is ScheduledRunInput {
  return !('runKey' in arg);
}

/** The run's input from the Schedule's fixed one: the window's event (source `schedule`, type `tick`), from its nominal time. */
export function windowRunInput(arg: ScheduledRunInput, workflowId = workflowInfo().workflowId): RunInput {
  const nominal = arg.scheduled.nominal ?? nominalOf().nominal;
  const nominalMs = Date.parse(nominal);
  return {
    runKey: workflowId,
    agent: arg.agent,
    wakeKey: arg.wakeKey,
    eventKey: eventKey({ source: 'schedule', type: 'tick', entity: arg.scheduled.scheduleId, bucketStartMs: nominalMs }),
    source: 'schedule',
    entity: arg.scheduled.scheduleId,
    type: 'tick',
    occurredAt: new Date(nominalMs).toISOString(),
    bucketStart: isoSeconds(nominalMs),
    payload: arg.payload,
    fingerprint: arg.fingerprint,
    deliveryId: workflowId,
    origin: { kind: 'window', window: { ...arg.scheduled, nominal } },
  };
}

/**
 * A window's report to its schedule's ledger, sent once. A window that runs sends it after its first
 * step (its ledger's signal, workflow task and look-up are then off the lag of this and the other
 * windows firing in the same second); one that ends before, at once. It is not cancelled with the
 * run: a cancelled window is still a window that was decided.
 */
export class LedgerReport {
  private sent?: Promise<void>;

  constructor(
    private readonly scheduleId: string,
    private readonly report: TickReport,
  ) {}

  send(): Promise<void> {
    if (!this.sent) {
      this.sent = CancellationScope.nonCancellable(() => reportTick({ scheduleId: this.scheduleId, report: this.report }));
      this.sent.catch(() => undefined); // awaited (and its failure logged) by settleReport
    }
    return this.sent;
  }
}

export interface OpenedWindow {
  /** Set when the window is not the agent's to run: the run ends with it. */
  outcome?: RunOutcome;
  /** The ledger report; the run sends it after its first step and waits for it before it closes. */
  report: LedgerReport;
  /** Otherwise: where the run's first step looks for an earlier run of the window. */
  check?: WindowCheck;
}

/**
 * Before the agent's first step: the catch-up decision (`skip` declines a late window, `latest` folds
 * it into the newest due window, run as that window's own run) and the report to the schedule's
 * ledger (sent now when the window does not run, after the first step when it does: off its lag).
 * Whether an earlier run already took this window is the first step's first question (`check`, see
 * takenOutcome). `startedMs` is workflow time at the run's first activation.
 */
export async function openWindow(input: RunInput, w: ScheduledWindow, startedMs: number): Promise<OpenedWindow> {
  const nominal = w.nominal!;
  const decision = await catchUpDecision(w, nominal, startedMs);
  const report = new LedgerReport(w.scheduleId, decision);
  if (decision.outcome === 'late_skipped') {
    void report.send();
    const late = startedMs - Date.parse(nominal);
    return {
      report,
      outcome: {
        reason: 'skipped',
        summary: `window ${nominal} started ${late} ms after its time, later than lateAfter (${w.lateAfterMs} ms): not run, recorded as a gap (catchUp skip)`,
        output: { nominal, catchUp: 'skip', lateMs: late },
      },
    };
  }
  if (decision.outcome === 'coalesced') {
    void report.send();
    try {
      return { report, outcome: await foldInto(input, w, decision.into!) };
    } catch (err) {
      await settleReport(report); // the run fails or is cancelled: its report still goes out first
      throw err;
    }
  }

  const info = workflowInfo();
  return { report, check: { workflowId: info.workflowId, runId: info.runId } };
}

/**
 * The window had already been taken (the run's first step found the earlier run): the run ends
 * `duplicate`, pointing at it; with another payload than that run's, it fails as a mismatch (and
 * `pauseOnFailure` can pause the schedule).
 */
export function takenOutcome(input: RunInput, w: ScheduledWindow, taken: WindowTaken): RunOutcome {
  const { nominal, scheduleId } = w;
  if (taken.fingerprint && taken.fingerprint !== input.fingerprint) {
    throw ApplicationFailure.nonRetryable(
      `window ${nominal} of schedule ${scheduleId} already ran as ${taken.workflowId} with another payload (fingerprint ${taken.fingerprint}, now ${input.fingerprint}); rearm it to run it with this one`,
      FailureType.ScheduleWindowMismatch,
      { nominal, takenBy: taken },
    );
  }
  return {
    reason: 'duplicate',
    summary: `window ${nominal} was already taken by ${taken.workflowId} (${taken.terminalReason ?? taken.status.toLowerCase()}): not run again`,
    output: { nominal, takenBy: taken },
  };
}

/**
 * catchUp `latest`: this late window folds into the newest due one, which runs now as its own run
 * (`<prefix>-<into>`, a child of this one, so a later fire of that window is refused by Temporal and
 * the Schedule's overlap policy still sees the work). This run waits for it and ends `skipped`
 * (`cancelled` when that run was cancelled, as by this one's cancellation).
 */
async function foldInto(input: RunInput, w: ScheduledWindow, into: string): Promise<RunOutcome> {
  const workflowId = scheduleWindowRunKey(input.agent, w.scheduleId, into);
  const arg: ScheduledRunInput = {
    scheduled: { ...w, catchUp: 'all', nominal: into },
    agent: input.agent,
    wakeKey: input.wakeKey,
    payload: input.payload,
    fingerprint: input.fingerprint,
  };
  const folded = `window ${w.nominal} started late and was folded into the newest due window ${into} (catchUp latest)`;
  // Indexed from its start, as the gate's runs are (a window its Schedule starts cannot be: its event key is its nominal time).
  const index = startIndex(windowRunInput(arg, workflowId));
  const result = await runWindowAsChild(workflowId, arg, index, { nominal: into, into, workflowId });
  if (!result) return { reason: 'skipped', summary: `${folded}, whose run ${workflowId} had already started`, output: { into, workflowId } };
  // Cancelled (this run killed or cancelled by its Schedule's overlap policy, which cancels the window it runs): say so.
  const reason = result.terminalReason === 'cancelled' ? 'cancelled' : 'skipped';
  return { reason, summary: `${folded}, run as ${workflowId}: ${result.terminalReason}`, output: { into, workflowId, terminalReason: result.terminalReason } };
}

/** Send the ledger report if it is not out yet, and wait for it before the run closes (an activity of a closed run may never be dispatched); its failure is logged, not the run's. */
export async function settleReport(report: LedgerReport | undefined): Promise<void> {
  if (!report) return;
  await CancellationScope.nonCancellable(() => report.send()).catch((err: unknown) =>
    log.warn('schedule ledger report failed', { error: (err as Error).message }),
  );
}
