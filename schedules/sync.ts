import { ScheduleNotFoundError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { fixedDelayWorkflowId } from '../src/core/schedule-messages';
import type { FixedDelayInput } from '../src/core/schedule-types';
import { keyEvent } from '../src/gate/key-event';
import type { TriggerRegistry } from '../src/gate/trigger-registry';
import type { ScheduleDefinition } from './definition';
import { definitionDigest, DIGEST_MEMO, OWNER, OWNER_MEMO, toScheduleOptions } from './to-temporal';

export interface SyncReport {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** Removed because they are no longer in code (only with `prune`). */
  pruned: string[];
  /** wakegate's schedules that are no longer in code, left in place because `prune` was not given. */
  notInCode: string[];
  /** Paused in Temporal (by a person in the Web UI, the CLI, or pauseOnFailure): sync left them paused. */
  paused: { id: string; note?: string }[];
  /** A schedule with this id exists but is not wakegate's: left untouched. */
  conflicts: { id: string; message: string }[];
}

export interface SyncOptions {
  client: Client;
  taskQueue: string;
  definitions: readonly ScheduleDefinition[];
  prune?: boolean;
  /** The triggers and agents the ticks will pass the gate with; the built-in ones by default. */
  registry: TriggerRegistry;
}

/**
 * Refuse, before anything reaches Temporal, a schedule whose agent is not woken by schedules or
 * cannot derive its wake key from the schedule's payload: the error names the schedule and the field.
 */
export function checkScheduleAgents(definitions: readonly ScheduleDefinition[], registry: TriggerRegistry): void {
  for (const def of definitions) {
    try {
      keyEvent(registry, { source: 'schedule', entity: def.id, type: 'tick', occurredAt: '2026-01-01T00:00:00Z', payload: def.payload }, { agent: def.agent });
    } catch (err) {
      throw new Error(`schedule "${def.id}" cannot wake agent "${def.agent}": ${(err as Error).message}`);
    }
  }
}

/**
 * Idempotent upsert of the definitions into Temporal. Creates missing schedules, updates those whose
 * definition digest changed (spec, action, policies; never `state`, so a schedule a person paused
 * stays paused and is reported), leaves equal ones untouched, and deletes wakegate's own schedules
 * that left the code only with `prune`. Ownership is the schedule memo `managedBy: wakegate`;
 * schedules without it are never touched. Fixed-delay definitions are loops
 * (`wakegate-delay/<id>`), restarted when their definition changed.
 */
export async function syncSchedules(opts: SyncOptions): Promise<SyncReport> {
  const { client, taskQueue, definitions } = opts;
  const report: SyncReport = { created: [], updated: [], unchanged: [], pruned: [], notInCode: [], paused: [], conflicts: [] };
  checkScheduleAgents(definitions, opts.registry);
  for (const def of definitions) {
    if (def.cadence === 'fixed_delay') await syncFixedDelay(client, taskQueue, def, report, opts.registry);
    else await syncFixedRate(client, taskQueue, def, report, opts.registry);
  }
  const wanted = new Set(definitions.map((d) => d.id));
  for (const id of await ownedScheduleIds(client)) {
    if (wanted.has(id)) continue;
    if (opts.prune) {
      await client.schedule.getHandle(id).delete();
      report.pruned.push(id);
    } else report.notInCode.push(id);
  }
  for (const id of await runningFixedDelayIds(client)) {
    if (wanted.has(id)) continue;
    if (opts.prune) {
      await client.workflow.getHandle(fixedDelayWorkflowId(id)).terminate('pruned: the schedule is no longer in code');
      report.pruned.push(id);
    } else report.notInCode.push(id);
  }
  return report;
}

async function syncFixedRate(client: Client, taskQueue: string, def: ScheduleDefinition, report: SyncReport, registry: TriggerRegistry): Promise<void> {
  const options = toScheduleOptions(def, taskQueue, registry);
  const handle = client.schedule.getHandle(def.id);
  let desc;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
    await client.schedule.create(options);
    report.created.push(def.id);
    return;
  }
  if (desc.memo?.[OWNER_MEMO] !== OWNER) {
    report.conflicts.push({
      id: def.id,
      message: `a schedule "${def.id}" exists that wakegate did not create (no memo ${OWNER_MEMO}=${OWNER}); rename the definition or delete that schedule`,
    });
    return;
  }
  if (desc.state.paused) report.paused.push({ id: def.id, ...(desc.state.note ? { note: desc.state.note } : {}) });
  const current = desc.action.type === 'startWorkflow' ? desc.action.memo?.[DIGEST_MEMO] : undefined;
  if (current === definitionDigest(def, taskQueue, registry)) {
    report.unchanged.push(def.id);
    return;
  }
  // The update keeps the state the schedule has (paused, note, remaining actions): only code-owned fields change.
  await handle.update((prev) => ({ spec: options.spec, action: options.action, policies: options.policies, state: prev.state }));
  report.updated.push(def.id);
}

async function syncFixedDelay(client: Client, taskQueue: string, def: ScheduleDefinition, report: SyncReport, registry: TriggerRegistry): Promise<void> {
  const workflowId = fixedDelayWorkflowId(def.id);
  const digest = definitionDigest(def, taskQueue, registry);
  let running = false;
  try {
    const desc = await client.workflow.getHandle(workflowId).describe();
    running = desc.status.name === 'RUNNING';
    if (running && desc.memo?.[DIGEST_MEMO] === digest) {
      report.unchanged.push(def.id);
      return;
    }
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const input: FixedDelayInput = { scheduleId: def.id, agent: def.agent, payload: def.payload, delayMs: def.delay! };
  await client.workflow.start('fixedDelayWorkflow', {
    workflowId,
    taskQueue,
    args: [input],
    memo: { [DIGEST_MEMO]: digest, [OWNER_MEMO]: OWNER, rationale: def.rationale },
    // A changed definition replaces the loop (its drift record starts over).
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
  });
  (running ? report.updated : report.created).push(def.id);
}

/** wakegate's Temporal Schedules (visibility: eventually consistent, fine for pruning). */
export async function ownedScheduleIds(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const s of client.schedule.list()) if (s.memo?.[OWNER_MEMO] === OWNER) ids.push(s.scheduleId);
  return ids.sort();
}

async function runningFixedDelayIds(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query: 'WorkflowType = "fixedDelayWorkflow" AND ExecutionStatus = "Running"' })) {
    if (wf.memo?.[OWNER_MEMO] === OWNER) ids.push(wf.workflowId.replace(/^wakegate-delay\//, ''));
  }
  return ids;
}
