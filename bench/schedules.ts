import { Client, Connection, ScheduleOverlapPolicy, type WorkflowExecutionInfo } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { DevServer } from '../devserver/dev-server';
import { defineSchedule } from '../schedules/definition';
import { toScheduleOptions } from '../schedules/to-temporal';
import type { RunInput } from '../core/types';
import { WakeTerminalReason } from '../core/search-attributes';
import { createWakeWorker } from '../runtime/worker';
import { exampleApp } from '../test/helpers/app';
import { benchRecorder } from './results';
import { histograms } from './stats';

/**
 * `npm run bench:schedules`: on a dev server of its own, real fires (no backfill) of several
 * schedules in parallel (5 per kind at 2 s for 70 s by default): lag from a window's nominal time to
 * the first step of its run, for wakegate (the Schedule starts the run itself; the run checks its
 * window and reports to the ledger, then its first step, `prepareRun`) and for a bare Temporal
 * Schedule starting a bare workflow with one activity, in the same run on the same server, with the
 * median of each hop on the way (from the workflows' histories). Prints one JSON object.
 *
 * A third series is a reference: a bare Schedule starting wakegate's run workflow with one fixed,
 * whole input (`runWorkflow`, the canary), without the window's check (a local activity), catch-up
 * policy or ledger report. The difference to wakegate's series is what those cost.
 */
const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 5);
/** Interval of every schedule (overlap skip: a window that comes due while the previous run is open is skipped, not measured). */
const EVERY = process.env.BENCH_EVERY ?? '2s';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 70);

const EventType = temporal.api.enums.v1.EventType;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

async function list(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const rows: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query })) rows.push(wf);
  return rows;
}

type History = temporal.api.history.v1.IHistoryEvent[];
const atMs = (ev: temporal.api.history.v1.IHistoryEvent | undefined): number | undefined =>
  ev?.eventTime ? Number(ev.eventTime.seconds) * 1000 + Math.floor((ev.eventTime.nanos ?? 0) / 1e6) : undefined;
const first = (h: History, type: temporal.api.enums.v1.EventType) => atMs(h.find((e) => e.eventType === type));
const historyOf = async (client: Client, workflowId: string, runId?: string): Promise<History> =>
  (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];

/**
 * Where one workflow's share of the lag goes, from its history: started (by the Schedule or the
 * parent) → its first workflow task dispatched → that task completed → the first activity of the
 * named type started (the run's first step: `prepareRun` for wakegate's run, which a window's ledger
 * report beside it must not stand in for).
 */
function hops(
  h: History,
  activityType: string,
): { startedMs?: number; dispatchMs?: number; taskMs?: number; toActivityMs?: number; activityStartedMs?: number; activityMs?: number } {
  const started = first(h, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const taskStarted = first(h, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const taskDone = first(h, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const scheduled = h.find(
    (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  );
  const activityStarted = atMs(
    h.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
        String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    ),
  );
  const activityDone = atMs(
    h.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED &&
        String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    ),
  );
  const diff = (a?: number, b?: number) => (a !== undefined && b !== undefined ? a - b : undefined);
  return {
    startedMs: started,
    dispatchMs: diff(taskStarted, started),
    taskMs: diff(taskDone, taskStarted),
    toActivityMs: diff(activityStarted, taskDone),
    activityStartedMs: activityStarted,
    activityMs: diff(activityDone, activityStarted),
  };
}

const nominalFromId = (id: string) => Date.parse(id.slice(id.lastIndexOf('/') + 1).replace(/^.*-(\d{4}-)/, '$1'));

async function main(): Promise<void> {
  const recorder = benchRecorder('schedules', {
    schedulesPerSeries: SCHEDULES,
    every: EVERY,
    seconds: SECONDS,
    overlap: 'skip',
    fires: 'real fires, no backfill; the three series fire at the same instants',
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost',
    agent: 'canary (the one-call path): the Schedule starts its run directly',
  });
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = await DevServer.start({});
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const native = await NativeConnection.connect({ address: server.address });
  try {
    const wakeWorker = await createWakeWorker({
      connection: native,
      namespace: 'default',
      taskQueue: 'bench-wakegate',
      shutdownGraceTime: '1 second',
      activities: exampleApp.activities(),
    });
    const bareWorker = await Worker.create({
      connection: native,
      taskQueue: 'bench-bare',
      workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-schedule-workflow'), logger: new DefaultLogger('ERROR') }),
      activities: { async bareActivity() {} },
    });
    const ids = Array.from({ length: SCHEDULES }, (_, i) => i);
    await Promise.all([
      wakeWorker.runUntil(async () =>
        bareWorker.runUntil(async () => {
          const defs = ids.map((i) =>
            defineSchedule({
              id: `bench-wg-${i}`,
              description: 'bench',
              agent: 'canary',
              cadence: 'fixed_rate',
              spec: { every: EVERY },
              overlap: 'skip',
              catchUp: 'latest',
              rationale: 'benchmark: the default policy of a heartbeat-like schedule',
            }),
          );
          for (const d of defs) await client.schedule.create(toScheduleOptions(d, 'bench-wakegate', exampleApp.registry));
          for (const i of ids) {
            await client.schedule.create({
              scheduleId: `bench-bare-${i}`,
              spec: { intervals: [{ every: EVERY }] },
              action: { type: 'startWorkflow', workflowType: 'bareWorkflow', taskQueue: 'bench-bare', workflowId: `bench-bare-${i}` },
              policies: { overlap: ScheduleOverlapPolicy.SKIP },
            });
          }
          for (const i of ids) {
            const runKey = `canary@bench-direct/tick/${i}`;
            const run: RunInput = {
              runKey,
              agent: 'canary',
              wakeKey: `bench-direct-${i}`,
              eventKey: `bench-direct/tick/${i}`,
              source: 'bench-direct',
              entity: `bench-direct-${i}`,
              type: 'tick',
              occurredAt: new Date().toISOString(),
              bucketStart: new Date().toISOString(),
              payload: {},
              fingerprint: 'bench',
              origin: { kind: 'event' },
            };
            await client.schedule.create({
              scheduleId: `bench-direct-${i}`,
              spec: { intervals: [{ every: EVERY }] },
              action: { type: 'startWorkflow', workflowType: 'runWorkflow', taskQueue: 'bench-wakegate', workflowId: runKey, args: [run] },
              policies: { overlap: ScheduleOverlapPolicy.SKIP },
            });
          }
          await new Promise((r) => setTimeout(r, SECONDS * 1000));
          for (const i of ids) {
            await client.schedule.getHandle(`bench-wg-${i}`).pause();
            await client.schedule.getHandle(`bench-bare-${i}`).pause();
            await client.schedule.getHandle(`bench-direct-${i}`).pause();
          }
          await new Promise((r) => setTimeout(r, 5000));
        }),
      ),
    ]);
    // Per fire: the total lag (nominal → first activity of the run) and its hops, medians below.
    const parts: Record<string, number[]> = {};
    const add = (name: string, v: number | undefined) => v !== undefined && (parts[name] ??= []).push(v);
    const wg: number[] = [];
    const notRun: Record<string, number> = {};
    for (const wf of await list(client, 'WakeSource = "schedule"')) {
      const nominal = nominalFromId(wf.workflowId);
      const history = await historyOf(client, wf.workflowId, wf.runId);
      const run = hops(history, 'prepareRun');
      if (run.activityStartedMs === undefined) {
        // A window that found itself taken or declined by its catch-up policy: counted, not a lag.
        const reason = wf.typedSearchAttributes.get(WakeTerminalReason) ?? wf.status.name;
        notRun[reason] = (notRun[reason] ?? 0) + 1;
        continue;
      }
      wg.push(run.activityStartedMs - nominal);
      add('wakegate, Schedule → run: nominal → run started (the Schedule)', run.startedMs! - nominal);
      add("wakegate: run's first workflow task dispatched", run.dispatchMs);
      add("wakegate: run's first workflow task (worker)", run.taskMs);
      add('wakegate: run task done → first step (prepareRun) started', run.toActivityMs);
      add("wakegate: the first step itself (with the window's check)", run.activityMs);
    }
    const bb: number[] = [];
    for (const wf of await list(client, 'WorkflowType = "bareWorkflow"')) {
      const nominal = nominalFromId(wf.workflowId);
      const bare = hops(await historyOf(client, wf.workflowId, wf.runId), 'bareActivity');
      if (bare.activityStartedMs === undefined) continue;
      bb.push(bare.activityStartedMs - nominal);
      add('bare: nominal → workflow started (the Schedule)', bare.startedMs! - nominal);
      add('bare: first workflow task dispatched', bare.dispatchMs);
      add('bare: first workflow task (worker)', bare.taskMs);
      add('bare: task done → first activity started', bare.toActivityMs);
    }
    const direct: number[] = [];
    for (const wf of await list(client, 'WakeSource = "bench-direct"')) {
      const nominal = nominalFromId(wf.workflowId);
      const run = hops(await historyOf(client, wf.workflowId, wf.runId), 'prepareRun');
      if (run.activityStartedMs === undefined) continue;
      direct.push(run.activityStartedMs - nominal);
      add('reference, Schedule → runWorkflow: nominal → run started (the Schedule)', run.startedMs! - nominal);
      add("reference: run's first workflow task dispatched", run.dispatchMs);
      add("reference: run's first workflow task (worker)", run.taskMs);
      add('reference: run task done → first activity started', run.toActivityMs);
      add('reference: the first step itself', run.activityMs);
    }
    // The three series' lags on one bin width, so their distributions can be drawn side by side.
    const hist = histograms({ wg, bb, direct });
    const summary = (xs: number[], key: keyof typeof hist) => ({
      fires: xs.length,
      p50Ms: pct(xs, 50),
      p99Ms: pct(xs, 99),
      maxMs: Math.max(...xs),
      histogram: hist[key],
    });
    const result = {
      what: 'lag from nominal time to the first step of the run (its first activity; prepareRun for wakegate; real fires, several schedules in parallel)',
      wakegate: { ...summary(wg, 'wg'), notRun },
      bareTemporal: summary(bb, 'bb'),
      ratio: { p50: +(pct(wg, 50) / pct(bb, 50)).toFixed(2), p99: +(pct(wg, 99) / pct(bb, 99)).toFixed(2) },
      reference: {
        what: 'a bare Schedule starting runWorkflow with a fixed whole input: no check of the window, no catch-up, no ledger report',
        ...summary(direct, 'direct'),
        ratio: { p50: +(pct(direct, 50) / pct(bb, 50)).toFixed(2), p99: +(pct(direct, 99) / pct(bb, 99)).toFixed(2) },
      },
      medianHopsMs: Object.fromEntries(Object.entries(parts).map(([name, xs]) => [name, pct(xs, 50)])),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    const problems = wg.length < 100 || bb.length < 100 ? [`too few fires for a p99 (wakegate ${wg.length}, bare ${bb.length}); raise BENCH_SECONDS`] : [];
    await recorder.write(result, problems);
    if (problems.length > 0) throw new Error(problems.join('\n'));
  } finally {
    await client.connection.close();
    await native.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
