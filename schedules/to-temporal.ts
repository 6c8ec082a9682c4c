import { createHash } from 'node:crypto';
import { ScheduleOverlapPolicy, type ScheduleOptions } from '@temporalio/client';
import { canonicalJson } from '../src/gate/fingerprint';
import { tickWorkflowId } from '../src/core/schedule-messages';
import type { ScheduleTickInput } from '../src/core/schedule-types';
import { scheduleRunKeyPrefix } from '../src/core/ids';
import type { ScheduledRunInput } from '../src/core/run-types';
import { keyEvent } from '../src/gate/key-event';
import type { TriggerRegistry } from '../src/gate/trigger-registry';
import type { OverlapPolicy, ScheduleDefinition } from './definition';

/** Schedule memo key that marks a Temporal Schedule as wakegate's own: sync and prune touch nothing else. */
export const OWNER_MEMO = 'managedBy';
export const OWNER = 'wakegate';
/** Action memo key holding the digest of the definition the schedule was last synced from. */
export const DIGEST_MEMO = 'wakegateDigest';

export const OVERLAP: Record<OverlapPolicy, ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  buffer_all: ScheduleOverlapPolicy.BUFFER_ALL,
  cancel: ScheduleOverlapPolicy.CANCEL_OTHER,
  terminate: ScheduleOverlapPolicy.TERMINATE_OTHER,
};

/** Parse a CLI `--overlap` value (wakegate's spelling), or throw naming the choices. */
export function overlapFromName(name: string): ScheduleOverlapPolicy {
  if (name === 'allow_all') return ScheduleOverlapPolicy.ALLOW_ALL;
  const p = OVERLAP[name as OverlapPolicy];
  if (!p) throw new Error(`unknown overlap "${name}": use skip, buffer_one, buffer_all, cancel, terminate or allow_all`);
  return p;
}

/**
 * Catch-up in Temporal terms. `all` and `latest` keep Temporal's default catch-up window (365 days)
 * so every missed window reaches a tick; `latest` then folds late ticks into the newest due window
 * in the tick (Temporal has no "latest only"). `skip` uses Temporal's minimum window (10 s): older
 * windows are dropped by Temporal (counted as numActionsMissedCatchupWindow), and the tick declines
 * anything later than `lateAfter` that Temporal still starts.
 */
export function catchupWindowMs(def: ScheduleDefinition): number {
  return def.catchUp === 'skip' ? 10_000 : 365 * 24 * 3_600_000;
}

/** The tick's input: a coalescing agent's Schedule starts a tick with it for each window. */
function tickInput(def: ScheduleDefinition): ScheduleTickInput {
  return { scheduleId: def.id, agent: def.agent, payload: def.payload, catchUp: def.catchUp, lateAfterMs: def.lateAfter };
}

/** What the gate derives from a schedule's payload for an agent on the one-call path: fixed in the run's input at sync. */
interface OneCallWake {
  wakeKey: string;
  fingerprint: string;
  payload: Record<string, unknown>;
}

/**
 * What the gate derives from the definition alone, once, at sync (the wake key, the fingerprint, the
 * validated payload): for an agent on the one-call path it becomes the input of the run the Schedule
 * starts itself; undefined for a coalescing agent, whose tick passes each window to the gate. A
 * definition the gate would refuse is refused here, naming the schedule.
 */
function oneCallWake(def: ScheduleDefinition, registry: TriggerRegistry): OneCallWake | undefined {
  let keyed;
  try {
    keyed = keyEvent(
      registry,
      { source: 'schedule', entity: def.id, type: 'tick', occurredAt: '2026-01-01T00:00:00Z', payload: def.payload },
      { agent: def.agent },
    );
  } catch (err) {
    throw new Error(`schedule "${def.id}" cannot wake agent "${def.agent}": ${(err as Error).message}`);
  }
  const wake = keyed.wakes[0]!;
  if (wake.agent.policy.coalesce) return undefined;
  return { wakeKey: wake.input.wakeKey, fingerprint: wake.input.fingerprint, payload: wake.input.payload };
}

/**
 * What the Schedule starts for each window. An agent on the one-call path: its run itself
 * (`runWorkflow`, ID `<agent>@schedule/tick/<id>-<nominal>`), with the gate's fingerprint as memo, so
 * no workflow stands between the Schedule and the run (the run applies the catch-up policy and answers
 * a window that already ran, see workflows/schedule/window-run.ts). A coalescing agent: a tick, which passes
 * each window through the gate to the agent's coalescer.
 */
function scheduleAction(def: ScheduleDefinition, taskQueue: string, registry: TriggerRegistry, digest: string): ScheduleOptions['action'] {
  const wake = oneCallWake(def, registry);
  const memo = { [DIGEST_MEMO]: digest, scheduleId: def.id };
  if (!wake) {
    return { type: 'startWorkflow', workflowType: 'scheduleTickWorkflow', workflowId: tickWorkflowId(def.id), taskQueue, args: [tickInput(def)], memo };
  }
  const run: ScheduledRunInput = {
    scheduled: { scheduleId: def.id, catchUp: def.catchUp, lateAfterMs: def.lateAfter },
    agent: def.agent,
    wakeKey: wake.wakeKey,
    payload: wake.payload,
    fingerprint: wake.fingerprint,
  };
  return {
    type: 'startWorkflow',
    workflowType: 'runWorkflow',
    workflowId: scheduleRunKeyPrefix(def.agent, def.id),
    taskQueue,
    args: [run],
    memo: { ...memo, fingerprint: run.fingerprint },
  };
}

/** The Temporal Schedule for a fixed-rate definition (state left out: sync never sets it on update). */
export function toScheduleOptions(def: ScheduleDefinition, taskQueue: string, registry: TriggerRegistry): ScheduleOptions {
  if (def.cadence !== 'fixed_rate' || !def.spec) throw new Error(`schedule "${def.id}" is fixed_delay: it runs as a workflow loop, not a Temporal Schedule`);
  const s = def.spec;
  const spec: ScheduleOptions['spec'] = {
    ...(s.every !== undefined ? { intervals: [{ every: s.every, ...(s.offset ? { offset: s.offset } : {}) }] } : {}),
    ...(s.cron ? { cronExpressions: [...s.cron] } : {}),
    ...(s.calendar ? { calendars: s.calendar.map((c) => ({ ...c })) as never } : {}),
    timezone: s.timezone,
    ...(def.jitter ? { jitter: def.jitter } : {}),
  };
  const digest = definitionDigest(def, taskQueue, registry);
  return {
    scheduleId: def.id,
    spec,
    action: scheduleAction(def, taskQueue, registry, digest),
    policies: { overlap: OVERLAP[def.overlap], catchupWindow: catchupWindowMs(def), pauseOnFailure: def.pauseOnFailure },
    memo: { [OWNER_MEMO]: OWNER, description: def.description, rationale: def.rationale },
  };
}

/** sha256 of everything sync writes for a definition: equal digest means nothing to update. */
export function definitionDigest(def: ScheduleDefinition, taskQueue: string, registry: TriggerRegistry): string {
  // What the agent derives from the payload (wake key, fingerprint) too: sync must keep the run's input current.
  const wake = oneCallWake(def, registry);
  return createHash('sha256')
    .update(canonicalJson({ def, taskQueue, ...(wake ? { wake } : {}) }))
    .digest('hex')
    .slice(0, 16);
}
