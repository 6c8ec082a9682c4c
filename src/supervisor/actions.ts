import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { haltUpdate, releaseUpdate, resetUpdate } from '../core/supervisor-messages';
import type { ReleaseRecord, SupervisorStatus } from '../core/supervisor-types';
import { SupervisorLink } from './link';
import type { SupervisorPolicy } from '../core/supervisor-types';
import { defaultSupervisorPolicy } from './policy';

/** What a person can do to the supervisor (the CLI and the `/supervisor` page): always with a name and a reason. */
export type PersonRequest =
  | { kind: 'reset'; who: string; reason: string }
  | { kind: 'release' | 'discard'; who: string; reason: string; agent?: string }
  | { kind: 'halt' | 'drain'; who: string; reason: string };

export type PersonResult = { ok: true; status?: SupervisorStatus; release?: ReleaseRecord } | { ok: false; message: string };

/**
 * Carry out a person's request as an update of the supervisor (started first if it is not running).
 * A refusal by the supervisor (no name or reason, a reset of an armed breaker, a release before the
 * reset) comes back as `{ ok: false, message }`; anything else is thrown.
 */
export async function actOnSupervisor(
  client: Client,
  taskQueue: string,
  req: PersonRequest,
  policy: SupervisorPolicy = defaultSupervisorPolicy,
): Promise<PersonResult> {
  const who = req.who?.trim();
  const reason = req.reason?.trim();
  if (!who || !reason) return { ok: false, message: 'a name (who) and a reason are both required' };
  const link = new SupervisorLink({ client, taskQueue, policy });
  await link.ensure(false);
  const handle = client.workflow.getHandle(link.workflowId);
  try {
    switch (req.kind) {
      case 'reset':
        return { ok: true, status: await handle.executeUpdate(resetUpdate, { args: [{ who, reason }] }) };
      case 'release':
      case 'discard':
        return {
          ok: true,
          release: await handle.executeUpdate(releaseUpdate, { args: [{ who, reason, action: req.kind, ...(req.agent ? { agent: req.agent } : {}) }] }),
        };
      case 'halt':
      case 'drain':
        return { ok: true, status: await handle.executeUpdate(haltUpdate, { args: [{ who, reason, drain: req.kind === 'drain' }] }) };
    }
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) {
      return { ok: false, message: (err.cause instanceof Error ? err.cause.message : undefined) ?? err.message };
    }
    throw err;
  }
}
