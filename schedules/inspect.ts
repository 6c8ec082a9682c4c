import { ScheduleNotFoundError, WorkflowNotFoundError, type Client, type ScheduleDescription, type ScheduleOverlapPolicy } from '@temporalio/client';
import { cadenceQuery, fixedDelayWorkflowId, gapsQuery, ledgerWorkflowId } from '../src/core/schedule-messages';
import type { LedgerState } from '../src/core/schedule-types';
import type { ScheduleDefinition } from './definition';
import { OVERLAP, OWNER, OWNER_MEMO } from './to-temporal';

/** The overlap policy in force for a trigger or backfill: the schedule's own unless the caller names one. */
export function effectiveOverlap(desc: ScheduleDescription, override?: ScheduleOverlapPolicy): ScheduleOverlapPolicy {
  return override ?? desc.policies.overlap;
}

const name = (p: ScheduleOverlapPolicy) => Object.entries(OVERLAP).find(([, v]) => v === p)?.[0] ?? String(p).toLowerCase();

/** One schedule as `schedules list` shows it: the agent it wakes (from code), the rest read from Temporal (so Web UI changes show). */
export async function describeSchedule(client: Client, def: ScheduleDefinition): Promise<Record<string, unknown>> {
  const policy = { cadence: def.cadence, overlap: def.overlap, catchUp: def.catchUp, rationale: def.rationale };
  if (def.cadence === 'fixed_delay') {
    try {
      const handle = client.workflow.getHandle(fixedDelayWorkflowId(def.id));
      const desc = await handle.describe();
      const cadence = desc.status.name === 'RUNNING' ? await handle.query(cadenceQuery) : undefined;
      return { id: def.id, agent: def.agent, policy: { ...policy, delayMs: def.delay }, status: desc.status.name, cadence };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { id: def.id, agent: def.agent, policy, status: 'not_synced' };
      throw err;
    }
  }
  let desc: ScheduleDescription;
  try {
    desc = await client.schedule.getHandle(def.id).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { id: def.id, agent: def.agent, policy, status: 'not_synced' };
    throw err;
  }
  const raw = desc.raw.info;
  const toNum = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    id: def.id,
    agent: def.agent,
    owned: desc.memo?.[OWNER_MEMO] === OWNER,
    policy: {
      ...policy,
      temporal: { overlap: name(desc.policies.overlap), catchupWindowMs: desc.policies.catchupWindow, pauseOnFailure: desc.policies.pauseOnFailure },
    },
    paused: desc.state.paused,
    note: desc.state.note ?? null,
    nextRuns: desc.info.nextActionTimes.slice(0, 5).map((d) => d.toISOString()),
    recentRuns: desc.info.recentActions.map((a) => ({
      scheduledAt: a.scheduledAt.toISOString(),
      takenAt: a.takenAt.toISOString(),
      workflowId: a.action.workflow.workflowId,
    })),
    running: desc.info.runningActions.map((a) => a.workflow.workflowId),
    counts: {
      taken: desc.info.numActionsTaken,
      skippedOverlap: desc.info.numActionsSkippedOverlap,
      missedCatchupWindow: desc.info.numActionsMissedCatchupWindow,
      // Not mapped by the typed SDK result: read from the raw protobuf (Long).
      buffered: toNum(raw?.bufferSize),
      bufferDropped: toNum(raw?.bufferDropped),
    },
  };
}

/** The schedule's durable gap records, from its ledger (empty if no window has reported yet). */
export async function scheduleGaps(client: Client, scheduleId: string): Promise<LedgerState & { note: string }> {
  const note =
    'not_started windows are found when the next window reports; windows after lastNominal are not judged yet. ' +
    'Temporal counts (schedules list: skippedOverlap, missedCatchupWindow) cover every window, named or not.';
  try {
    const state = await client.workflow.getHandle(ledgerWorkflowId(scheduleId)).query(gapsQuery);
    return { ...state, note };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { scheduleId, gaps: [], droppedGaps: 0, reports: 0, note };
    throw err;
  }
}

/** Trigger a schedule now, with its own overlap policy unless `overlap` is given (the SDK would default to ALLOW_ALL). */
export async function triggerSchedule(client: Client, scheduleId: string, overlap?: ScheduleOverlapPolicy): Promise<Record<string, unknown>> {
  const handle = client.schedule.getHandle(scheduleId);
  const policy = effectiveOverlap(await handle.describe(), overlap);
  const at = Date.now();
  await handle.trigger(policy);
  // Temporal names the manual run (or tick) after the time it takes the request (seconds), like a scheduled one.
  return { scheduleId, overlap: name(policy), requestedAt: new Date(at).toISOString() };
}

/** Backfill [start, end] with the schedule's own overlap policy unless `overlap` is given. */
export async function backfillSchedule(
  client: Client,
  scheduleId: string,
  start: Date,
  end: Date,
  overlap?: ScheduleOverlapPolicy,
): Promise<Record<string, unknown>> {
  const handle = client.schedule.getHandle(scheduleId);
  const policy = effectiveOverlap(await handle.describe(), overlap);
  await handle.backfill({ start, end, overlap: policy });
  return { scheduleId, overlap: name(policy), start: start.toISOString(), end: end.toISOString() };
}
