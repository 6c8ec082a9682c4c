import { ActivityCancellationType, CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import type { ScheduleTickInput, ScheduleTickResult } from '../../src/core/schedule-types';
import { catchUpDecision, nominalOf } from './window';
import { workflowNow } from '../shared/clock';

const { runScheduledWindow } = proxyActivities<ScheduleActivities>({
  // A window's wake may hold for a long time; the heartbeat notices a dead worker and carries cancellation.
  startToCloseTimeout: '24 hours',
  heartbeatTimeout: '10 seconds',
  // Overlap `cancel`: the tick stays open until its wake has really ended `cancelled`.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 5 },
});

const { reportTick } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10 },
});

/**
 * One tick of a wakegate schedule whose agent coalesces: the Temporal Schedule's action. Applies the
 * catch-up policy that Temporal does not have on its own (`latest`: fold a late tick into the newest
 * due window; `skip`: decline a tick that starts more than `lateAfterMs` late), reports its decision
 * to the schedule's ledger (gap records), then runs the window through the gate and waits for the
 * wake, so Temporal's overlap policy sees the real run. Cancelling the tick cancels the wake, which
 * ends `cancelled`. Fails when the wake failed (so `pauseOnFailure` pauses the schedule). (A one-call
 * agent's Schedule starts the run itself, with no tick: workflows/schedule/window-run.ts.)
 */
export async function scheduleTickWorkflow(input: ScheduleTickInput): Promise<ScheduleTickResult> {
  const { nominal, source } = nominalOf();
  // Workflow time of this first activation: when the tick actually gets to decide. Not the run's
  // start time: a tick started just before the server went down decides only after it is back.
  const startedMs = workflowNow();
  const base = { scheduleId: input.scheduleId, nominal, nominalSource: source };

  const report = await catchUpDecision(input, nominal, startedMs);
  const window = report.into ?? nominal;
  // The ledger report runs beside the window (not before it, to keep it off the lag), and is not
  // cancelled with the tick: a cancelled window is still a window that was decided.
  const reported = CancellationScope.nonCancellable(() => reportTick({ scheduleId: input.scheduleId, report }));
  if (report.outcome === 'late_skipped') {
    await reported;
    return { ...base, outcome: report.outcome };
  }

  try {
    const run = await runScheduledWindow({
      scheduleId: input.scheduleId,
      agent: input.agent,
      nominal: window,
      payload: input.payload,
      deliveryId: workflowInfo().workflowId,
    });
    await reported;
    return { ...base, outcome: report.outcome, run, ...(report.into ? { into: report.into } : {}) };
  } catch (err) {
    if (isCancellation(err)) {
      // The activity has already cancelled the wake and seen it end; say so in the tick's result.
      return CancellationScope.nonCancellable(async () => {
        await reported;
        return {
          ...base,
          outcome: report.outcome,
          run: { nominal: window, decision: 'cancelled', eventKey: '', workflowId: '', terminalReason: 'cancelled' },
        };
      });
    }
    await reported.catch(() => undefined); // the window's failure is the one to report
    throw err;
  }
}
