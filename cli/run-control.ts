import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { agentEventId } from '../core/ids';
import { approveSignal, killUpdate, rejectSignal, statusQuery } from '../core/messages';
import type { WakeResult } from '../core/types';
import { ExitCode, printJson, UsageError } from './output';

/** `<key>` is the run's workflow ID, as `emit` prints it (`workflowId`): `agent@eventKey` or, coalesced, `agent#wakeKey@eventKey`. */
async function withClient(fn: (client: Client) => Promise<number>): Promise<number> {
  const client = await connectClient(loadConfig());
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

const who = (opts: { who?: string }) => opts.who ?? loadConfig().operator;

async function update(key: string, def: typeof killUpdate, arg: object): Promise<number> {
  return withClient(async (client) => {
    try {
      const ack = await client.workflow.getHandle(key).executeUpdate(def, { args: [arg as never] });
      printJson({ workflowId: key, ...ack });
      return ExitCode.ok;
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) {
        const message = (err.cause instanceof Error ? err.cause.message : undefined) ?? err.message;
        printJson({ workflowId: key, accepted: false, error: { code: 'refused', message } });
        process.stderr.write(`wakegate: refused: ${message}\n`);
        return ExitCode.refused;
      }
      throw err;
    }
  });
}

/**
 * Approve or reject the waiting effect: refused unless the status query shows one waiting (and, with
 * --effect-key, that one); then the decision goes as a signal and is confirmed from the status.
 */
async function decide(key: string, def: typeof approveSignal, arg: { who: string; reason?: string; effectKey?: string }): Promise<number> {
  return withClient(async (client) => {
    const handle = client.workflow.getHandle(key);
    const refuse = (message: string) => {
      printJson({ workflowId: key, accepted: false, error: { code: 'refused', message } });
      process.stderr.write(`wakegate: refused: ${message}\n`);
      return ExitCode.refused;
    };
    let status;
    try {
      status = await handle.query(statusQuery);
    } catch (err) {
      return refuse(`no open run ${key}: ${(err as Error).message}`);
    }
    const waiting = status.awaitingApproval;
    if (!waiting) return refuse(`no effect of ${key} is waiting for approval (phase ${status.phase})`);
    if (arg.effectKey && arg.effectKey !== waiting.effectKey) return refuse(`the waiting effect is ${waiting.effectKey}, not ${arg.effectKey}`);
    await handle.signal(def, { ...arg, effectKey: waiting.effectKey });
    printJson({ workflowId: key, accepted: true, effectKey: waiting.effectKey, effect: waiting.effect, args: waiting.args, phase: status.phase });
    return ExitCode.ok;
  });
}

/** Delete one closed workflow execution and wait until the server no longer shows it (deletion is asynchronous). */
async function deleteClosed(client: Client, workflowId: string, runId: string): Promise<void> {
  await client.workflowService.deleteWorkflowExecution({ namespace: client.options.namespace, workflowExecution: { workflowId, runId } });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await client.workflow.getHandle(workflowId, runId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      throw err;
    }
    if (Date.now() > deadline) throw new Error(`deleted ${workflowId} but the server still shows it after 60 s; try again`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Re-arm a closed run: delete it and any earlier closed run of the same ID, so the next delivery of
 * its event (or the next fire of its schedule's window) starts afresh. For a coalesced
 * run, the admission records of every event it took are deleted first, so each of those events may
 * be admitted again; given an admission record (`agent@eventKey`), only that event is re-armed.
 * Refused while the run is open (kill it first). A person's explicit act: nothing re-arms by itself.
 */
export async function rearm(key: string): Promise<number> {
  return withClient(async (client) => {
    const desc = await client.workflow.getHandle(key).describe();
    if (desc.status.name === 'RUNNING') throw new UsageError(`${key} is still running; kill it first`);
    const admissions: string[] = [];
    if (desc.type === 'wakeWorkflow' && desc.status.name === 'COMPLETED') {
      const result = (await client.workflow.getHandle(key, desc.runId).result()) as WakeResult;
      for (const e of result.absorbed ?? []) admissions.push(agentEventId(result.agent, e.eventKey));
    }
    const rearmed: string[] = [];
    for (const id of admissions) {
      try {
        const a = await client.workflow.getHandle(id).describe();
        if (a.status.name === 'RUNNING') continue; // still deciding: it is not this run's to re-arm
        await deleteClosed(client, id, a.runId);
        rearmed.push(id);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    await deleteClosed(client, key, desc.runId);
    // Earlier closed runs of the same ID go too: a schedule's window fired again may have left several
    // (its run, then duplicates or a mismatch), and its next run looks for any earlier one.
    const earlier: string[] = [];
    for await (const wf of client.workflow.list({ query: `WorkflowId = "${key}"` })) {
      if (wf.runId === desc.runId || wf.status.name === 'RUNNING') continue;
      await deleteClosed(client, key, wf.runId);
      earlier.push(wf.runId);
    }
    printJson({ workflowId: key, rearmed: true, deletedRunId: desc.runId, wasStatus: desc.status.name, admissionsRearmed: rearmed, earlierRunsDeleted: earlier });
    return ExitCode.ok;
  });
}

/** `wakegate kill <key> --reason R [--who W]`: the `kill` update; refused (exit 3) when the run is not open. */
export function kill(key: string, opts: { reason: string; who?: string }): Promise<number> {
  return update(key, killUpdate, { who: who(opts), reason: opts.reason });
}

/** `wakegate approve|reject <key> [--who] [--reason] [--effect-key]`. */
export function decideCommand(decision: 'approve' | 'reject', key: string, opts: { who?: string; reason?: string; effectKey?: string }): Promise<number> {
  return decide(key, decision === 'approve' ? approveSignal : rejectSignal, { who: who(opts), reason: opts.reason, effectKey: opts.effectKey });
}
