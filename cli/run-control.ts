import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { approveUpdate, killUpdate, rejectUpdate } from '../workflows/messages';
import { ExitCode, printJson, reportError, UsageError } from './output';

/** The event key is the workflow ID, so `<event key or workflow id>` is one argument either way. */
async function withClient(fn: (client: Client) => Promise<number>): Promise<number> {
  const client = await connectClient(loadConfig());
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

const who = (opts: { who?: string }) => opts.who ?? process.env.USER ?? 'operator';

async function update(key: string, def: typeof killUpdate | typeof approveUpdate, arg: object): Promise<number> {
  return withClient(async (client) => {
    try {
      const ack = await client.workflow.getHandle(key).executeUpdate(def as typeof killUpdate, { args: [arg as never] });
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
 * Re-arm a closed key: delete its closed run, so the next delivery of that event starts afresh.
 * Refused while the run is open (kill it first). A person's explicit act: nothing re-arms by itself.
 */
async function rearm(key: string): Promise<number> {
  return withClient(async (client) => {
    const desc = await client.workflow.getHandle(key).describe();
    if (desc.status.name === 'RUNNING') throw new UsageError(`${key} is still running; kill it first`);
    await client.workflowService.deleteWorkflowExecution({ namespace: client.options.namespace, workflowExecution: { workflowId: key, runId: desc.runId } });
    // Deletion is asynchronous on the server: answer only once the key is free.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await client.workflow.getHandle(key, desc.runId).describe();
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) break;
        throw err;
      }
      if (Date.now() > deadline) throw new Error(`deleted ${key} but the server still shows it after 60 s; try again`);
      await new Promise((r) => setTimeout(r, 250));
    }
    printJson({ workflowId: key, rearmed: true, deletedRunId: desc.runId, wasStatus: desc.status.name });
    return ExitCode.ok;
  });
}

/** `wakegate kill | approve | reject | rearm <key>`. */
export function registerRunControl(program: Command): void {
  const run = (fn: () => Promise<number>) => async () => {
    process.exitCode = await fn().catch(reportError);
  };
  program
    .command('kill <key>')
    .description('Stop a live run before its next step (in-flight activities are cancelled); it ends `cancelled`.')
    .requiredOption('--reason <why>', 'why it is being stopped (recorded on the run)')
    .option('--who <name>', 'who stops it (default: $USER)')
    .action((key: string, opts: { reason: string; who?: string }) => run(() => update(key, killUpdate, { who: who(opts), reason: opts.reason }))());
  for (const [name, def] of [['approve', approveUpdate], ['reject', rejectUpdate]] as const) {
    program
      .command(`${name} <key>`)
      .description(`${name === 'approve' ? 'Approve' : 'Reject'} the irreversible effect a run is waiting on.`)
      .option('--who <name>', 'who decides (default: $USER)')
      .option('--reason <why>', 'why')
      .option('--effect-key <key>', 'the effect key being decided (refused if another one is waiting)')
      .action((key: string, opts: { who?: string; reason?: string; effectKey?: string }) =>
        run(() => update(key, def, { who: who(opts), reason: opts.reason, effectKey: opts.effectKey }))(),
      );
  }
  program
    .command('rearm <key>')
    .description('Delete a closed run of this event key so the next delivery starts a new run.')
    .action((key: string) => run(() => rearm(key))());
}
