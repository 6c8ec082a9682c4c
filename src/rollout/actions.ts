import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { rolloutId } from '../core/ids';
import { newRolloutView, type RolloutReply, type RolloutStatus, type RolloutView, type RolloutWorkflowInput } from '../core/rollout';
import {
  promoteUpdate,
  rollbackUpdate,
  rolloutStatusQuery,
  startRolloutUpdate,
  stepUpdate,
  type PromoteRequest,
  type RollbackRequest,
  type StartRequest,
  type RolloutStepRequest,
} from '../core/rollout-messages';

/** What a person can do to a rollout (the CLI and tests): always with a name and a reason. */
export type RolloutRequest =
  | ({ kind: 'start' } & StartRequest)
  | ({ kind: 'step' } & RolloutStepRequest)
  | ({ kind: 'promote' } & PromoteRequest)
  | ({ kind: 'rollback' } & RollbackRequest);

/** Taken, with the rollout's reply; or refused, in the rollout's words. */
export type RolloutResult = { ok: true; reply: RolloutReply } | { ok: false; message: string };

/** Where a rollout lives and what it starts with when it is not running yet. */
export interface RolloutTarget {
  client: Client;
  taskQueue: string;
  agent: string;
  /** The agent's current version (the definition the app exports): the rollout's `current` when it first starts. */
  current: string;
  /** Evidence cadence while ramping, ms (default 30 s); only read when this call starts the workflow. */
  everyMs?: number;
}

/**
 * Start the agent's rollout workflow if it is not running (ID conflict policy USE_EXISTING: a
 * running one is kept as it is, whatever `current` and `everyMs` say), with its view in the memo
 * from the start so a reader never sees it without one.
 */
export async function ensureRollout(t: RolloutTarget): Promise<void> {
  const input: RolloutWorkflowInput = {
    taskQueue: t.taskQueue,
    agent: t.agent,
    current: t.current,
    ...(t.everyMs !== undefined ? { everyMs: t.everyMs } : {}),
  };
  await t.client.workflow.start('rolloutWorkflow', {
    workflowId: rolloutId(t.taskQueue, t.agent),
    taskQueue: t.taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    memo: { rollout: newRolloutView(t.current) },
  });
}

/**
 * Carry out a person's request as an update of the agent's rollout (started first if missing). A
 * refusal (by the update's validator, or a held fleet in the reply) comes back as
 * `{ ok: false, message }`; anything else (an unreachable Temporal) is thrown.
 */
export async function actOnRollout(t: RolloutTarget, req: RolloutRequest): Promise<RolloutResult> {
  if (!req.who?.trim() || !req.reason?.trim()) return { ok: false, message: 'a name (who) and a reason are both required' };
  await ensureRollout(t);
  const handle = t.client.workflow.getHandle(rolloutId(t.taskQueue, t.agent));
  const { kind, ...args } = req;
  try {
    const reply = await (kind === 'start'
      ? handle.executeUpdate(startRolloutUpdate, { args: [args as StartRequest] })
      : kind === 'step'
        ? handle.executeUpdate(stepUpdate, { args: [args as RolloutStepRequest] })
        : kind === 'promote'
          ? handle.executeUpdate(promoteUpdate, { args: [args as PromoteRequest] })
          : handle.executeUpdate(rollbackUpdate, { args: [args as RollbackRequest] }));
    return reply.accepted ? { ok: true, reply } : { ok: false, message: reply.message };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) {
      return { ok: false, message: (err.cause instanceof Error ? err.cause.message : undefined) ?? err.message };
    }
    throw err;
  }
}

/** The rollout's status from its query; undefined when the agent has no rollout workflow. */
export async function rolloutStatus(client: Client, taskQueue: string, agent: string): Promise<RolloutStatus | undefined> {
  try {
    return await client.workflow.getHandle(rolloutId(taskQueue, agent)).query(rolloutStatusQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The task queue's rollouts, one per agent, with the view each published (from visibility: no worker needed). */
export async function listRollouts(client: Client, taskQueue: string, bound = 500): Promise<{ agent: string; view?: RolloutView }[]> {
  const prefix = rolloutId(taskQueue, '');
  const out: { agent: string; view?: RolloutView }[] = [];
  const query = `WorkflowType = 'rolloutWorkflow' AND TaskQueue = ${quote(taskQueue)} AND ExecutionStatus = 'Running'`;
  for await (const info of client.workflow.list({ query })) {
    if (!info.workflowId.startsWith(prefix)) continue;
    const view = info.memo?.rollout as RolloutView | undefined;
    out.push({ agent: info.workflowId.slice(prefix.length), ...(view ? { view } : {}) });
    if (out.length >= bound) break;
  }
  return out.sort((a, b) => a.agent.localeCompare(b.agent));
}
