import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from '../../src/core/contracts';
import { gapsQuery, tickReportSignal } from '../../src/core/schedule-messages';
import type { GapRecord, LedgerState, TickReport } from '../../src/core/schedule-types';
import { workflowNow } from '../shared/clock';

const { windowsBetween } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 20 },
});

/** Keep the state (and the continue-as-new payload) bounded. */
const MAX_GAPS = 1000;
const REPORTS_PER_RUN = 500;
/**
 * A schedule's matching times are whole seconds, so two nominals at most this far apart have none
 * between them: the ledger asks Temporal only across a longer step (a schedule every second never asks).
 */
const SPEC_RESOLUTION_MS = 1000;

/** When the ledger recorded a gap (workflow time). */
const isoNow = () => new Date(workflowNow()).toISOString();

/**
 * The durable gap ledger of one schedule (workflow ID `wakegate-ledger/<schedule id>`), fed by each
 * window as it decides (the window's run, or a coalescing agent's tick; both called ticks below). Temporal counts skipped and missed windows (describe: numActionsSkippedOverlap,
 * numActionsMissedCatchupWindow) but does not say which ones; this ledger names them. Each tick
 * reports its nominal time and decision; the windows of the spec strictly between the newest
 * nominal seen and a newer one had no tick (skipped by overlap, or missed the catch-up window), and
 * are recorded `not_started`. Ticks that declined record themselves (`late_skipped`, `coalesced`).
 * A late arrival (a buffered or backfilled window) removes its own `not_started` record.
 *
 * The newest gaps are found only when the next tick arrives; `schedules gaps` says so.
 * Continues as new every 500 reports; keeps the newest 1000 gaps.
 */
export async function scheduleLedgerWorkflow(state: LedgerState): Promise<void> {
  const queue: TickReport[] = [];
  setHandler(tickReportSignal, (r) => void queue.push(r));
  setHandler(gapsQuery, () => state);

  const addGap = (g: GapRecord) => {
    state.gaps = state.gaps.filter((x) => x.nominal !== g.nominal);
    state.gaps.push(g);
    state.gaps.sort((a, b) => (a.nominal < b.nominal ? -1 : a.nominal > b.nominal ? 1 : 0));
    if (state.gaps.length > MAX_GAPS) {
      state.droppedGaps += state.gaps.length - MAX_GAPS;
      state.gaps = state.gaps.slice(-MAX_GAPS);
    }
  };

  let handled = 0;
  for (;;) {
    await condition(() => queue.length > 0 || (handled >= REPORTS_PER_RUN && queue.length === 0) || workflowInfo().continueAsNewSuggested);
    if (queue.length === 0) break;
    const r = queue.shift()!;
    handled += 1;
    state.reports += 1;
    if (state.lastNominal && Date.parse(r.nominal) - Date.parse(state.lastNominal) > SPEC_RESOLUTION_MS) {
      const missing = await windowsBetween({ scheduleId: state.scheduleId, afterIso: state.lastNominal, beforeIso: r.nominal });
      const covered = new Set(state.covered ?? []);
      for (const nominal of missing) if (!covered.has(nominal)) addGap({ nominal, reason: 'not_started', recordedAt: isoNow() });
    }
    if (!state.lastNominal || r.nominal > state.lastNominal) state.lastNominal = r.nominal;
    if (r.outcome === 'run') {
      state.gaps = state.gaps.filter((g) => !(g.nominal === r.nominal && g.reason === 'not_started'));
    } else {
      if (r.into) {
        // The window a late tick was folded into did run (under its own key), whether or not its own tick started.
        const into = r.into;
        state.covered = [...(state.covered ?? []).filter((c) => c !== into), into].slice(-100);
        state.gaps = state.gaps.filter((g) => !(g.nominal === into && g.reason === 'not_started'));
      }
      addGap({ nominal: r.nominal, reason: r.outcome, ...(r.into ? { into: r.into } : {}), recordedAt: isoNow() });
    }
  }
  await continueAsNew<typeof scheduleLedgerWorkflow>(state);
}
