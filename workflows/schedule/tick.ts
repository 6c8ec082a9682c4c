import { ActivityCancellationType, CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import { agentEventId, eventKey } from '../../src/core/ids';
import type { ScheduleTickInput, ScheduleTickResult, WindowRunResult } from '../../src/core/schedule-types';
import { catchUpDecision, nominalOf, runWindowAsChild } from './window';
import { isoSeconds } from '../../src/core/time';
import type { RunInput } from '../../src/core/run-types';
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
 * A one-call agent's window in a schedule synced by an earlier wakegate, whose action is still a tick
 * with `oneCall` (today's sync has the Schedule start such an agent's run itself, see
 * workflows/schedule/window-run.ts): the tick starts the window's run as a child workflow with the ID the gate
 * gave a window then (`agent@schedule/tick/<id>/<nominal>`; the gate still answers from a run so
 * named, see src/gate/one-call.ts), its reuse policy (a completed window never runs again, a
 * failed one may) and its fingerprint memo, and waits for it. Cancelling the tick cancels the run and
 * waits for it to end `cancelled`; a terminated tick asks it to cancel. Returns undefined when the ID
 * is taken (a window fired twice): the gate's activity then answers from the run that holds it.
 */
async function startWindowRun(input: ScheduleTickInput, window: string): Promise<WindowRunResult | undefined> {
  const oneCall = input.oneCall!;
  const nominalMs = Date.parse(window);
  const key = eventKey({ source: 'schedule', type: 'tick', entity: input.scheduleId, bucketStartMs: nominalMs });
  const runKey = agentEventId(input.agent, key);
  const run: RunInput = {
    runKey,
    agent: input.agent,
    wakeKey: oneCall.wakeKey,
    eventKey: key,
    source: 'schedule',
    entity: input.scheduleId,
    type: 'tick',
    occurredAt: new Date(nominalMs).toISOString(),
    bucketStart: isoSeconds(nominalMs),
    payload: oneCall.payload,
    fingerprint: oneCall.fingerprint,
    deliveryId: workflowInfo().workflowId,
    origin: { kind: 'event' },
  };
  const base = { nominal: window, decision: 'started', eventKey: key, workflowId: runKey };
  const result = await runWindowAsChild(runKey, run, base);
  return result && { ...base, terminalReason: result.terminalReason };
}

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
    const run =
      (input.oneCall && (await startWindowRun(input, window))) ??
      (await runScheduledWindow({
        scheduleId: input.scheduleId,
        agent: input.agent,
        nominal: window,
        payload: input.payload,
        deliveryId: workflowInfo().workflowId,
      }));
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
