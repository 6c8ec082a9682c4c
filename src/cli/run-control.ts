import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { approveSignal, forgetUpdate, killUpdate, rejectSignal, statusQuery } from '../core/messages';
import type { KillRequest } from '../core/run-types';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';
import { agentOfId, describeId, runPerAgent, runsOfEvent, type RunOfEvent } from './resolve-run';

/**
 * `<key>` is a run's workflow ID, as `emit` and `runs` print it (`workflowId`): `agent@eventKey` or,
 * coalesced, `agent#wakeKey@eventKey`; `kill` also takes an event key (`eventKey`).
 */
async function withClient(fn: (client: Client) => Promise<number>): Promise<number> {
  const client = await connectClient(loadConfig());
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

const who = (opts: { who?: string }) => opts.who ?? loadConfig().operator;

/** A refusal: one JSON object naming what was refused and why, a line on stderr, exit 3. */
function refuse(subject: Record<string, unknown>, message: string): number {
  printJson({ ...subject, accepted: false, error: { code: 'refused', message } });
  process.stderr.write(`wakegate: refused: ${message}\n`);
  return ExitCode.refused;
}

/** Send the `kill` update to an open run; refused (exit 3) when the run is not open. */
async function sendKill(client: Client, workflowId: string, req: KillRequest, about: Record<string, unknown> = {}): Promise<number> {
  try {
    const ack = await client.workflow.getHandle(workflowId).executeUpdate(killUpdate, { args: [req] });
    printJson({ workflowId, ...about, ...ack });
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) {
      const message = (err.cause instanceof Error ? err.cause.message : undefined) ?? err.message;
      return refuse({ workflowId, ...about }, message);
    }
    throw err;
  }
}

/**
 * Approve or reject the waiting effect: refused unless the status query shows one waiting (and, with
 * --effect-key, that one); then the decision goes as a signal and is confirmed from the status.
 */
async function decide(key: string, def: typeof approveSignal, arg: { who: string; reason?: string; effectKey?: string }): Promise<number> {
  return withClient(async (client) => {
    const handle = client.workflow.getHandle(key);
    const subject = { workflowId: key };
    let status;
    try {
      status = await handle.query(statusQuery);
    } catch (err) {
      return refuse(subject, `no open run ${key}: ${(err as Error).message}`);
    }
    const waiting = status.awaitingApproval;
    if (!waiting) return refuse(subject, `no effect of ${key} is waiting for approval (phase ${status.phase})`);
    if (arg.effectKey && arg.effectKey !== waiting.effectKey) return refuse(subject, `the waiting effect is ${waiting.effectKey}, not ${arg.effectKey}`);
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

/** How a coalescer closes otherwise than by itself: the supervisor's recovery takes over what it held. */
const CLOSED_BY_HAND = new Set(['TERMINATED', 'CANCELLED', 'FAILED', 'TIMED_OUT']);

/**
 * Re-arm a closed run: delete it and any earlier closed run of the same ID, so the next delivery of
 * its event (or the next fire of its schedule's window) starts afresh. For a coalesced run, its
 * coalescer first forgets every event the run took, so each of them may be admitted again.
 * Refused while the run is open (kill it first), or while its coalescer, closed by hand, waits for
 * its recovery. A person's explicit act: nothing re-arms by itself.
 */
export async function rearm(key: string): Promise<number> {
  return withClient(async (client) => {
    const desc = await describeId(client, key);
    if (!desc) return refuse({ workflowId: key }, `no workflow ${key}: rearm takes a closed run's workflow ID, as emit and runs print them`);
    if (desc.status.name === 'RUNNING') throw new UsageError(`${key} is still running; kill it first`);
    let eventsRearmed: string[] = [];
    if (desc.type === 'runWorkflow' && key.includes('#')) {
      // A coalesced run (`agent#wakeKey@openedBy`; event keys escape `@`): its coalescer holds its events' decisions.
      // Closed by itself, it is past its dedup horizon: nothing to forget.
      const coalescer = key.slice(0, key.indexOf('@'));
      const status = (await describeId(client, coalescer))?.status.name;
      if (status === 'RUNNING') eventsRearmed = await client.workflow.getHandle(coalescer).executeUpdate(forgetUpdate, { args: [{ runKey: key }] });
      // Closed by hand: the supervisor's recovery gives its dedup table, this run's events with it, to a
      // new chain (activities/coalescer/recover.ts). Deleted now, the run would leave them decided for
      // a run that no longer exists: a redelivery would be answered from it and never run.
      else if (status && CLOSED_BY_HAND.has(status))
        return refuse(
          { workflowId: key, coalescerId: coalescer },
          `its coalescer ${coalescer} closed ${status.toLowerCase()} and has not been recovered yet (the supervisor does within a round); rearm once \`wakegate coalescer\` shows it running`,
        );
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
    printJson({
      workflowId: key,
      rearmed: true,
      deletedRunId: desc.runId,
      wasStatus: desc.status.name,
      eventsRearmed,
      earlierRunsDeleted: earlier,
    });
    return ExitCode.ok;
  });
}

const listed = (runs: readonly RunOfEvent[]) => runs.map((r) => `${r.agent} (${r.workflowId}, ${r.status.toLowerCase()})`).join(', ');

/**
 * The run `kill <key>` means: `key` is a run's workflow ID; or an event key, meaning the run each
 * agent it woke has for it (a coalesced event: the run that absorbed it), one of them named by
 * `--agent` when there are several. Returns the exit code instead when there is nothing to kill.
 */
async function killTarget(client: Client, key: string, agent: string | undefined): Promise<{ workflowId: string; about?: Record<string, unknown> } | number> {
  const desc = await describeId(client, key);
  if (desc?.type === 'runWorkflow') {
    if (agent !== undefined && agentOfId(key) !== agent) throw new UsageError(`${key} is a run of ${agentOfId(key)}, not of ${agent}`);
    return { workflowId: key };
  }
  if (desc) {
    return refuse({ workflowId: key }, `${key} is a ${desc.type}, not a run: kill takes a run's workflow ID or an event key, as emit and runs print them`);
  }
  const all = runPerAgent(await runsOfEvent(client, app().registry, key));
  const about = { eventKey: key };
  const runs = agent === undefined ? all : all.filter((r) => r.agent === agent);
  if (runs.length === 0) {
    if (all.length) return refuse(about, `event ${about.eventKey} woke no run of ${agent}; it woke ${listed(all)}`);
    return refuse(
      { workflowId: key },
      `no run ${key}, and no run took an event with that key: kill takes a run's workflow ID or an event key, as emit and runs print them`,
    );
  }
  if (runs.length > 1) {
    const message = `event ${about.eventKey} woke ${runs.length} agents: ${listed(runs)}; name one with --agent`;
    printJson({ ...about, accepted: false, error: { code: 'ambiguous', message }, runs });
    process.stderr.write(`wakegate: ${message}\n`);
    return ExitCode.badInput;
  }
  const run = runs[0]!;
  const mine = { ...about, agent: run.agent };
  if (run.status === 'PENDING') {
    return refuse(
      { workflowId: run.workflowId, ...mine },
      `${run.workflowId}, the run that took event ${about.eventKey}, has not started yet (its batch is pending in its coalescer); kill it once it has started`,
    );
  }
  return { workflowId: run.workflowId, about: mine };
}

/**
 * `wakegate kill <workflowId|eventKey> --reason R [--who W] [--agent A]`: the `kill` update to the
 * run; refused (exit 3) when it is not open or there is none, exit 2 when an event key names runs of
 * several agents and `--agent` does not pick one.
 */
export function kill(key: string, opts: { reason: string; who?: string; agent?: string }): Promise<number> {
  const req = { who: who(opts), reason: opts.reason };
  return withClient(async (client) => {
    const target = await killTarget(client, key, opts.agent);
    return typeof target === 'number' ? target : sendKill(client, target.workflowId, req, target.about);
  });
}

/** `wakegate approve|reject <key> [--who] [--reason] [--effect-key]`. */
export function decideCommand(decision: 'approve' | 'reject', key: string, opts: { who?: string; reason?: string; effectKey?: string }): Promise<number> {
  return decide(key, decision === 'approve' ? approveSignal : rejectSignal, { who: who(opts), reason: opts.reason, effectKey: opts.effectKey });
}
