import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  sleep,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import { cadenceQuery } from '../../src/core/schedule-messages';
import type { FixedDelayInput, FixedDelayState } from '../../src/core/schedule-types';
import { isoSeconds } from '../../src/core/time';
import { workflowNow } from '../shared/clock';

/**
 * A window's run. Cancelled (the loop cancelled), the loop waits until the window's wake has really
 * ended `cancelled`, as a Schedule's tick does.
 */
function runScheduledWindow(window: Parameters<ScheduleActivities['runScheduledWindow']>[0]): ReturnType<ScheduleActivities['runScheduledWindow']> {
  return proxyActivities<ScheduleActivities>({
    startToCloseTimeout: '24 hours',
    heartbeatTimeout: '10 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 5 },
  }).runScheduledWindow(window);
}

const RUNS_PER_HISTORY = 100;

/**
 * Fixed-delay cadence, which Temporal Schedules do not have (they are fixed-rate): run a window,
 * wait `delayMs` after it ends (a durable timer), run the next. Never overlaps; the period is
 * run time + delay, so it drifts behind a fixed-rate grid, and the drift is visible in the
 * `cadence` query and the workflow memo (`driftMs`, `lastPeriodMs`). Each run passes the gate with
 * its own start time (seconds) as the nominal window; starts are at least `delayMs` >= 1 s apart, so
 * windows never share a key. Continues as new every 100 runs. A failed window does not stop the loop;
 * cancelling the loop cancels the window in flight, records `cancelled` and ends the loop cancelled.
 */
export async function fixedDelayWorkflow(input: FixedDelayInput): Promise<FixedDelayState> {
  const state: FixedDelayState = input.state ?? { runs: 0, driftMs: 0 };
  let phase = 'starting';
  setHandler(cadenceQuery, () => ({ ...state, delayMs: input.delayMs, phase }));

  for (let i = 0; i < RUNS_PER_HISTORY; i++) {
    if (input.maxRuns !== undefined && state.runs >= input.maxRuns) return state;
    const startMs = workflowNow();
    state.firstStartMs ??= startMs;
    if (state.lastStartMs !== undefined) state.lastPeriodMs = startMs - state.lastStartMs;
    state.driftMs = startMs - (state.firstStartMs + state.runs * input.delayMs);
    state.lastStartMs = startMs;
    phase = 'running';
    try {
      const run = await runScheduledWindow({
        scheduleId: input.scheduleId,
        agent: input.agent,
        nominal: isoSeconds(startMs),
        payload: input.payload,
        deliveryId: `${workflowInfo().workflowId}#${state.runs + 1}`,
      });
      state.lastTerminalReason = run.terminalReason ?? run.decision;
      // Waited for, a window cut short by the loop's cancellation comes back as its wake's outcome
      // (`cancelled`), not as a cancellation: the loop ends cancelled all the same.
      if (run.terminalReason === 'cancelled' && CancellationScope.current().consideredCancelled) await CancellationScope.current().cancelRequested;
    } catch (err) {
      if (isCancellation(err)) {
        // The loop itself was cancelled (a person, a schedule sync): its window's wake is cancelled
        // with it (the activity cancels the wake), so record that and end the loop cancelled.
        state.lastTerminalReason = 'cancelled';
        throw err;
      }
      state.lastTerminalReason = 'failed';
    }
    state.runs += 1;
    state.lastEndMs = workflowNow();
    upsertMemo({ cadence: { runs: state.runs, driftMs: state.driftMs, lastPeriodMs: state.lastPeriodMs ?? null, delayMs: input.delayMs } });
    if (input.maxRuns !== undefined && state.runs >= input.maxRuns) return state;
    phase = 'waiting';
    await sleep(input.delayMs);
  }
  // Its cadence memo goes with it (`schedules list` reads it between two windows).
  return makeContinueAsNewFunc<typeof fixedDelayWorkflow>({ memo: workflowInfo().memo })({ ...input, state });
}
