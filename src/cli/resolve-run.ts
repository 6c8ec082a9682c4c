import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import { shadowedAgent } from '../core/shadow';
import { agentEventId, coalescerId } from '../core/ids';
import { eventQuery } from '../core/messages';
import { WakeAgent } from '../core/search-attributes';
import type { RunResult } from '../core/run-types';
import { parseEventKey } from '../gate/keys';
import type { TriggerRegistry } from '../gate/trigger-registry';

/** A restarted run (overlap `cancel`) names its successor; follow at most this many, as the gate does. */
const MAX_SUPERSEDED_HOPS = 10;
/** At most this many runs are read from the visibility store for one event key. */
const MAX_INDEXED = 50;

/** One run that took an event, as `wakegate kill <event key>` sees it. */
export interface RunOfEvent {
  agent: string;
  workflowId: string;
  /**
   * Temporal's status of the run (`RUNNING`, `COMPLETED`, ...), or `PENDING`: a coalesced run whose
   * batch has not started yet.
   */
  status: string;
  startTime?: string;
}

/** The agent named by a run's or a coalescer's workflow ID (agent names never contain `@` or `#`). */
export function agentOfId(workflowId: string): string {
  return workflowId.split(/[@#]/, 1)[0]!;
}

/** The execution with this workflow ID (its latest run), or undefined when there is none. */
export async function describeId(client: Client, workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

const ofRun = (agent: string, workflowId: string, desc: WorkflowExecutionDescription): RunOfEvent => ({
  agent,
  workflowId,
  status: desc.status.name,
  startTime: desc.startTime.toISOString(),
});

/**
 * The run a coalescer says took `eventKey`, following restarts (overlap `cancel`) to the run that
 * holds the event now. Undefined when the coalescer is not open or decided nothing that started a
 * run for the event: skipped (a live run was only told of it), stale, or past its dedup horizon.
 */
export async function runOfCoalescedEvent(client: Client, coalescer: string, eventKey: string): Promise<RunOfEvent | undefined> {
  const agent = agentOfId(coalescer);
  let known;
  try {
    known = await client.workflow.getHandle(coalescer).query(eventQuery, { eventKey });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  if (!known || (known.decision !== 'started' && known.decision !== 'coalesced') || !known.runKey) return undefined;
  let runKey = known.runKey;
  for (let hop = 0; ; hop++) {
    const run = await describeId(client, runKey);
    if (!run) return { agent, workflowId: runKey, status: 'PENDING' };
    if (run.status.name === 'COMPLETED' && hop < MAX_SUPERSEDED_HOPS) {
      const result = (await client.workflow.getHandle(runKey, run.runId).result()) as RunResult;
      if (result.supersededBy) {
        runKey = result.supersededBy;
        continue;
      }
    }
    return ofRun(agent, runKey, run);
  }
}

/** What one workflow ID derived from an event key holds: a run, or a coalescer that decided the event. */
async function runAt(client: Client, workflowId: string, eventKey: string): Promise<RunOfEvent | undefined> {
  if (workflowId.includes('#')) return runOfCoalescedEvent(client, workflowId, eventKey);
  const desc = await describeId(client, workflowId);
  return desc?.type === 'runWorkflow' ? ofRun(agentOfId(workflowId), workflowId, desc) : undefined;
}

/**
 * The workflow IDs the gate gives one event's runs, one or two per agent its source wakes, and the
 * agent's coalescer, from the wake key the agent derives from what the key holds (source, type,
 * entity, time; a coalesced run of an agent whose wake key needs the payload is found by the index).
 */
function derivedIds(registry: TriggerRegistry, eventKey: string): string[] {
  let parts;
  try {
    parts = parseEventKey(eventKey);
  } catch {
    return []; // a malformed %-escape: not an event key the gate made
  }
  if (!parts) return [];
  const def = registry.get(parts.source);
  const ids = new Set<string>();
  for (const agent of registry.agentsFor(parts.source)) {
    const name = agent.policy.name;
    // Both paths, whatever the agent's policy says now: it may have coalesced when the event came.
    const event = { ...parts, occurredAt: new Date(parts.bucketStartMs).toISOString(), payload: {} };
    try {
      ids.add(coalescerId(name, agent.wakeKey(event)));
    } catch {
      // its wake key needs more than the key holds
    }
    // The run on the one-call path: under the name its trigger gives runs (src/gate/key-event.ts), or `agent@eventKey`.
    ids.add(def?.runKey ? def.runKey(name, { entity: parts.entity, bucketStartMs: parts.bucketStartMs }) : agentEventId(name, eventKey));
  }
  return [...ids];
}

/** Runs the visibility store lists with the event key, as the event that opened them or one they absorbed (the first 20). */
async function indexedRuns(client: Client, eventKey: string): Promise<RunOfEvent[]> {
  const quoted = `"${eventKey.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const query = `WorkflowType = "runWorkflow" AND ExecutionStatus != "ContinuedAsNew" AND (WakeEventKey = ${quoted} OR WakeAbsorbedEventKeys = ${quoted})`;
  const runs: RunOfEvent[] = [];
  for await (const w of client.workflow.list({ query, pageSize: MAX_INDEXED })) {
    const agent = w.typedSearchAttributes.get(WakeAgent) ?? agentOfId(w.workflowId);
    if (shadowedAgent(agent) !== undefined) continue; // a live shadow is not a run the event woke
    runs.push({
      agent,
      workflowId: w.workflowId,
      status: w.status.name,
      startTime: w.startTime.toISOString(),
    });
    if (runs.length >= MAX_INDEXED) break;
  }
  return runs;
}

/**
 * Every run an event key woke, by two ways that complement each other: the IDs the gate derives from
 * the key for each agent of its source in this deployment (exact at once, and through a coalescing
 * agent's coalescer also the run that absorbed the event, started or not), and the runs the
 * visibility store indexes with the key (agents this deployment no longer names; indexed about a
 * second after a run's first workflow task).
 */
export async function runsOfEvent(client: Client, registry: TriggerRegistry, eventKey: string): Promise<RunOfEvent[]> {
  const [derived, indexed] = await Promise.all([
    Promise.all(derivedIds(registry, eventKey).map((id) => runAt(client, id, eventKey))),
    indexedRuns(client, eventKey),
  ]);
  const found = new Map<string, RunOfEvent>();
  for (const r of [...derived, ...indexed]) if (r && !found.has(r.workflowId)) found.set(r.workflowId, r);
  return [...found.values()];
}

const rank = (status: string) => (status === 'RUNNING' ? 0 : status === 'PENDING' ? 1 : 2);

/**
 * One run per agent: the one that holds the event now (a restarted run's successor, not the run it
 * cancelled), that is the open one, else one not started yet, else the newest; sorted by agent.
 */
export function runPerAgent(runs: readonly RunOfEvent[]): RunOfEvent[] {
  const best = new Map<string, RunOfEvent>();
  for (const r of runs) {
    const b = best.get(r.agent);
    if (!b || rank(r.status) < rank(b.status) || (rank(r.status) === rank(b.status) && (r.startTime ?? '') > (b.startTime ?? ''))) best.set(r.agent, r);
  }
  return [...best.values()].sort((a, b) => (a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0));
}
