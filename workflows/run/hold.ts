import { condition, isCancellation, log, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { WakeHeld } from '../../src/core/search-attributes';
import { holdNudgeSignal } from '../../src/core/supervisor-messages';
import type { HoldRecord, RunVerdict } from '../../src/core/supervisor-types';
import type { KillRequest, ResumedHold } from '../../src/core/run-types';
import { recheckHold } from './proxies';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import { workflowNow } from '../shared/clock';

/** A run held on a halt re-checks at most this rarely (a release nudges it at once). */
const MAX_RECHECK_MS = 5 * 60_000;

/** What `holdIfSupervised` answers when the held run should continue as new. */
export const CONTINUE_AS_NEW = 'continue-as-new' as const;

/** Phases of a run that has not begun its work: a supervisor's halt holds it rather than cancels it. */
export const NOT_YET_WORKING: ReadonlySet<string> = new Set(['starting', 'loading', 'held']);

/**
 * The first step's verdict once a halt reached the run before its work: held on the halt (a
 * person releases it), unless the supervisor already said more (a hold or a discard).
 */
export function haltVerdict(halt: KillRequest, verdict: RunVerdict): RunVerdict {
  if (verdict.kind !== 'run') return verdict;
  return {
    kind: 'hold',
    hold: 'halted',
    reason: `held by a halt before it began (${halt.who}: ${halt.reason}); a person resets the supervisor and releases held wakes`,
    recheckMs: 1000,
  };
}

/**
 * The supervisor's hand on a run's first step: on `run` nothing happens; on `hold` the run waits,
 * durably and visibly (phase `held`, search attribute `WakeHeld`), before any token is spent, until
 * the supervisor lets it go: a person's release (held on a halt) or a permit when the window slid
 * (held on a cap). It re-checks when nudged (a release was recorded) and on a timer, so a nudge
 * lost to a visibility lag costs time, never the wake. A person's discard ends it `discarded`; a
 * kill while held ends it `cancelled` (the caller's scope).
 */
export async function holdIfSupervised(
  agent: string,
  first: RunVerdict | undefined,
  state: RunState,
  held: { record?: HoldRecord; heldAtMs?: number; waitMs?: number },
  resumed?: ResumedHold,
  /** False once the run is about to end anyway (its coalescer superseded it): it does not continue as new then. */
  mayContinue: () => boolean = () => true,
): Promise<RunOutcome | typeof CONTINUE_AS_NEW | undefined> {
  if (!resumed && (!first || first.kind === 'run')) return undefined;
  let nudged = false;
  setHandler(holdNudgeSignal, () => {
    nudged = true;
  });
  const heldAtMs = resumed?.heldAtMs ?? workflowNow();
  // A resumed hold asks again at once, in the hold it was in (its search attribute came with it).
  let verdict: RunVerdict = resumed ? { kind: 'hold', hold: resumed.record.hold, reason: resumed.record.reason, recheckMs: 0 } : first!;
  let hold = verdict.kind === 'hold' ? verdict.hold : 'halted';
  const record: HoldRecord = resumed?.record ?? { hold, reason: verdict.kind === 'hold' ? verdict.reason : 'held', heldAt: new Date(heldAtMs).toISOString() };
  held.record = record;
  held.heldAtMs = heldAtMs;
  const phaseBefore = state.phase;
  state.phase = 'held';
  if (!resumed) {
    upsertSearchAttributes([{ key: WakeHeld, value: hold }]);
    log.warn('run held by the supervisor', { agent, hold, reason: record.reason });
  }
  let waitMs = verdict.kind === 'hold' ? verdict.recheckMs : 1000;
  /** Re-checks made in this run: it continues as new only after one (never straight into another continue). */
  let rechecks = 0;
  while (verdict.kind === 'hold') {
    if (verdict.hold !== hold) {
      hold = verdict.hold;
      record.hold = hold;
      record.reason = verdict.reason;
      upsertSearchAttributes([{ key: WakeHeld, value: hold }]);
    }
    // A long hold (a cap full for days, a halt over a weekend) re-checks many times: when Temporal
    // suggests it, the run continues as new and goes on waiting, its history short again.
    if (rechecks > 0 && mayContinue() && workflowInfo().continueAsNewSuggested) {
      held.waitMs = waitMs;
      return CONTINUE_AS_NEW;
    }
    // A nudge that arrives while a re-check is on its way (a discard right after a release) is kept
    // for the next round, not cleared with the one that started it.
    await condition(() => nudged, waitMs);
    // A resumed run re-checks at once and afresh (a nudge may have reached the run it continued
    // from), then at the pace that run had reached.
    const wasNudged = nudged || (resumed !== undefined && rechecks === 0);
    if (resumed && waitMs === 0) waitMs = Math.max(1000, resumed.waitMs);
    nudged = false;
    rechecks += 1;
    try {
      verdict = await recheckHold({ agent, hold, heldAtMs, ...(wasNudged ? { nudged: true } : {}) });
    } catch (err) {
      // The supervisor could not be asked (Temporal or the worker briefly away): the wake stays held,
      // never lost or failed for it, and asks again after the next wait.
      if (isCancellation(err)) throw err;
      log.warn('held run could not re-check; still held', { agent, hold, err: (err as Error).message });
      waitMs = Math.min(MAX_RECHECK_MS, waitMs * 2);
      continue;
    }
    if (verdict.kind === 'hold') waitMs = verdict.hold === 'cap' ? verdict.recheckMs : Math.min(MAX_RECHECK_MS, Math.max(verdict.recheckMs, waitMs * 2));
  }
  record.releasedAt = new Date(workflowNow()).toISOString();
  if (verdict.kind === 'discard') {
    upsertSearchAttributes([{ key: WakeHeld, value: 'discarded' }]);
    record.releasedBy = { who: verdict.who, reason: verdict.reason };
    return { reason: 'discarded', summary: `held by the supervisor and discarded by ${verdict.who}: ${verdict.reason}`, output: { held: record } };
  }
  if (verdict.releasedBy) record.releasedBy = verdict.releasedBy;
  upsertSearchAttributes([{ key: WakeHeld, value: 'released' }]);
  state.phase = phaseBefore;
  // The wall-clock budget starts when the run may work, not when it was held.
  state.startedAtMs = workflowNow();
  return undefined;
}
