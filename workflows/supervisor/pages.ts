import type { PageAction, PageOutcome, StopRequest } from '../../src/core/supervisor-types';
import {
  MAX_PAGE_RESEND_MS,
  MAX_STOP_RETRY_MS,
  PAGE_RESEND_MS,
  STOP_SWEEP_MS,
  iso,
  log,
  sawActivity,
  type MachineState,
  type Turn,
  type VisibilityFailure,
} from './state';
import { visibilityAnswered } from './observe';

/*
 * Pages and stops that must land. A trip no one hears of is a halt no one resets: a page whose
 * retries ran out, or that the pager refused, is sent again (same dedup key: one incident) while
 * what it is about stands. The kill switch is not lost to a passing outage, nor to visibility's
 * lag: a failed stop is made again until it lands, and one that landed is swept once more a little later.
 */

/** A page is still worth sending while its trip stands (not reset) or its cap hold lasts. */
export const pageStillWanted = (m: MachineState, a: PageAction): boolean =>
  a.tripId !== undefined ? m.mode !== 'armed' && m.trip?.id === a.tripId : a.capAgent !== undefined && m.capHolds[a.capAgent] !== undefined;

/** Stops asked for by a trip that a person has since reset are not made. */
export const stopStillWanted = (m: MachineState, stop: StopRequest): boolean => m.mode !== 'armed' && stop.tripId === m.trip?.id;

/** A page dropped for good: a cap's page that never got through no longer stands for the cap's window, so its next episode pages. */
function dropPage(m: MachineState, a: PageAction): void {
  if (a.capKey && m.capPages?.[a.capKey]?.dedupKey === a.page.dedupKey) delete m.capPages[a.capKey];
}

/** How a page went: recorded on its trip or cap hold; a failed one is sent again at a backoff while it is still wanted. */
export function paged(turn: Turn, a: PageAction, outcome: { dedupKey: string; status: string } | { error: string }): void {
  const { m, nowMs } = turn;
  let result: PageOutcome;
  if ('error' in outcome) {
    result = { error: outcome.error };
    log(turn, 'error', 'supervisor could not page', { dedupKey: a.page.dedupKey, err: outcome.error });
    if (!pageStillWanted(m, a)) dropPage(m, a);
    else {
      const failedSends = (a.failedSends ?? 0) + 1;
      const dueMs = nowMs + Math.min(MAX_PAGE_RESEND_MS, (m.policy.pageResendMs ?? PAGE_RESEND_MS) * 2 ** (failedSends - 1));
      (m.pagesDue ??= []).push({ dueMs, page: { ...a, failedSends } });
      result = { ...result, resendAt: iso(dueMs), sends: failedSends };
    }
  } else result = { ...outcome, at: iso(nowMs), ...(a.failedSends ? { sends: a.failedSends + 1 } : {}) };
  if (a.tripId !== undefined) for (const t of [m.trip, ...m.trips]) if (t?.id === a.tripId) t.page = result;
  const hold = a.capAgent ? m.capHolds[a.capAgent] : undefined;
  if (hold) hold.paged = 'error' in result ? result : { dedupKey: result.dedupKey, status: result.status };
}

/** How a stop of live runs went: while its trip stands, a failed one is made again at a backoff, and one that landed is swept once more. */
export function stopped(turn: Turn, a: StopRequest, failed?: VisibilityFailure): void {
  const { m, nowMs } = turn;
  visibilityAnswered(turn, 'stop live runs', failed);
  if (m.visibilityError?.unavailable || m.mode === 'armed') return;
  // The runs it stopped close now: a watch reads them.
  if (!failed) sawActivity(m, nowMs);
  const stop: StopRequest = { ...a, tripId: a.tripId ?? m.trip?.id };
  if (stop.tripId === undefined) delete stop.tripId;
  const attempt = stop.attempt ?? 0;
  if (failed)
    (m.stopsDue ??= []).push({
      dueMs: nowMs + Math.min(MAX_STOP_RETRY_MS, Math.max(1000, m.policy.observeEveryMs) * 2 ** attempt),
      stop: { ...stop, attempt: attempt + 1 },
    });
  else if (!stop.sweep) (m.stopsDue ??= []).push({ dueMs: nowMs + STOP_SWEEP_MS, stop: { ...stop, attempt: 0, sweep: true } });
}

/** Stops and pages that came due (and are still wanted) become actions; those no longer wanted are dropped. */
export function dueNow(turn: Turn): void {
  const { m, nowMs } = turn;
  if (m.stopsDue) {
    for (const d of m.stopsDue) if (d.dueMs <= nowMs && stopStillWanted(m, d.stop)) turn.actions.push({ kind: 'stop', ...d.stop });
    m.stopsDue = m.stopsDue.filter((d) => d.dueMs > nowMs && stopStillWanted(m, d.stop));
    if (!m.stopsDue.length) delete m.stopsDue;
  }
  if (m.pagesDue) {
    const kept: typeof m.pagesDue = [];
    for (const d of m.pagesDue) {
      if (!pageStillWanted(m, d.page)) dropPage(m, d.page);
      else if (d.dueMs <= nowMs) turn.actions.push({ kind: 'page', ...d.page });
      else kept.push(d);
    }
    if (kept.length) m.pagesDue = kept;
    else delete m.pagesDue;
  }
}

/** The soonest a stop or a page that is still wanted comes due (epoch ms), if any. */
export function nextDueMs(m: MachineState): number | undefined {
  const dues = [...(m.stopsDue ?? []).filter((d) => stopStillWanted(m, d.stop)), ...(m.pagesDue ?? []).filter((d) => pageStillWanted(m, d.page))];
  return dues.length ? Math.min(...dues.map((d) => d.dueMs)) : undefined;
}

/** Pages still being sent when the workflow continues as new are sent again from the next run (the same dedup key: one incident). */
export function continuing(turn: Turn, inFlight: PageAction[]): void {
  const { m, nowMs } = turn;
  for (const page of inFlight) if (pageStillWanted(m, page)) (m.pagesDue ??= []).push({ dueMs: nowMs, page: { ...page } });
}
