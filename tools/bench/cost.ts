import { randomUUID } from 'node:crypto';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createWakegate, loadConfig, type Wakegate } from 'wakegate';
import { DevServer } from 'wakegate/testing';
import { exampleOptions } from '../../examples/app';
import { notesAgent, notesTrigger } from '../soak/notes-agent';
import { standinSettings, startStandins } from '../standins';
import { temporal } from '@temporalio/proto';
import { MAX_QUIET_OBSERVE_MS } from '../../workflows/supervisor/observe';
import { ACTION_KINDS, ACTIONS_SOURCE, eventTimeMs, type ActionCounts } from './cost-actions';
import { OCCURRED_AT, PATHS, type PathDef } from './cost-paths';
import { activitiesOf, actionsOf, executions, outcomeOf, readByType, settle, sumReadings, type Execution, type Reading, type StepName } from './cost-read';
import { rpcCounter } from './capacity-count';
import { benchRecorder } from './results';

/**
 * `npm run bench:cost`: what a wake costs in Temporal Cloud's billable actions, counted from the
 * histories by Temporal Cloud's published list (https://docs.temporal.io/cloud/actions; the rules in
 * ./cost-actions.ts), per path, beside a bare workflow with the same activities measured in the same
 * run; and what an idle fleet costs an hour. On a dev server of its own, with the example deployment
 * (its agents, its supervisor policy, the soak's steer agent added) composed by `createWakegate`,
 * the deployment's own worker on one task queue per path (its supervisor idle before the first wake), and wakes driven through the real gate,
 * webhook listener and Temporal Schedule (./cost-paths.ts). Each path, once it has settled, reads:
 * - the wake: every run's history, the coalescers' and any other workflow's on its queue (a
 *   schedule's ledger) whole, a Schedule's two actions per fire, the entry process's queries;
 * - the supervisor's share: its events written from the first wake until it is idle again (the path's
 *   worker stays up: its reads of the path's last runs and its quiet reads after are the path's), over the wakes;
 * - the bare workflow (./bare-workflow.ts): for each run, one bare workflow making the run's own
 *   steps (prepareRun, toolCall, modelTurn, commitEffect) with the inputs the run gave them, read
 *   from its history; a schedule's window beside a bare Temporal Schedule starting it.
 * Meanwhile a worker on a queue of its own gets no wake at all: the actions of every workflow on it
 * over BENCH_IDLE_S (after 10 s of start-up) are the idle fleet's, per hour.
 * Each figure is set beside its target with `met`. Knobs: BENCH_WAKES (runs per path, 10),
 * BENCH_EVENTS_PER_KEY (10), BENCH_IDLE_S (300).
 */
const WAKES = Number(process.env.BENCH_WAKES ?? 10);
const EVENTS_PER_KEY = Number(process.env.BENCH_EVENTS_PER_KEY ?? 10);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 300);
const IDLE_START_S = 10;
/** How long after a path settled its supervisor may take to be idle again (BENCH_TAIL_S). */
const TAIL_S = Number(process.env.BENCH_TAIL_S ?? 1200);

/** The targets each figure is set beside: what a wake may cost against the bare workflow's floor. */
const TARGETS = {
  oneCallOverBare: 1.5,
  coalescedOneOverBare: 2,
  coalescedManyPerEventOverBare: 0.3,
  supervisorPerWake: 0.5,
  idlePerHour: 60,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const perWake = (c: ActionCounts, n: number) => Object.fromEntries(ACTION_KINDS.filter((k) => c[k] > 0).map((k) => [k, r3(c[k] / n)]));

interface Bench {
  tag: string;
  app: Wakegate;
  namespace: string;
  connection: NativeConnection;
  entry: Client;
  observer: Client;
  rpc: ReturnType<typeof rpcCounter>;
  workflowBundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
  bareQueue: string;
}

interface Target {
  figure: string;
  path?: string;
  value: number;
  target: number;
  met: boolean;
}
const atMost = (figure: string, value: number, target: number, path?: string): Target => ({
  figure,
  ...(path ? { path } : {}),
  value,
  target,
  met: value <= target,
});

/** The bare workflow beside a path: each run's steps made again with the same inputs, and what its histories hold per run. */
async function bareBeside(b: Bench, name: string, runs: Execution[]) {
  const plans = runs.map((x) => activitiesOf(x.events));
  const ids = plans.map((_, i) => `cost-bare-${name}-${i}-${b.tag}`);
  await Promise.all(
    plans.map((p, i) =>
      b.observer.workflow.execute('bareWorkflow', { workflowId: ids[i]!, taskQueue: b.bareQueue, args: [p.steps as { name: StepName; arg: unknown }[]] }),
    ),
  );
  return {
    runs: plans.length,
    read: await readIds(b, ids),
    steps: plans[0]?.steps.map((s) => s.name) ?? [],
    notInBare: mergeCounts(plans.map((p) => p.others)),
    scheduleFires: 0,
  };
}

/** A schedule's window beside a bare Temporal Schedule starting the bare workflow with the first window's steps, as many windows. */
async function bareSchedule(b: Bench, runs: Execution[], fires: number) {
  const plan = activitiesOf(runs[0]!.events);
  const scheduleId = `cost-bare-schedule-${b.tag}`;
  const handle = await b.observer.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: '2s' }] },
    action: { type: 'startWorkflow', workflowType: 'bareWorkflow', workflowId: `cost-bare-window-${b.tag}`, taskQueue: b.bareQueue, args: [plan.steps] },
    policies: { overlap: ScheduleOverlapPolicy.BUFFER_ALL },
  });
  const query = `TemporalScheduledById = "${scheduleId}"`;
  while ((await b.observer.workflow.count(query)).count < fires) await sleep(250);
  await handle.delete();
  while ((await b.observer.workflow.count(`${query} AND ExecutionStatus = "Running"`)).count > 0) await sleep(250);
  const execs = await executions(b.observer, query);
  return {
    runs: execs.length,
    read: sumReadings(Object.values(readByType(execs))),
    steps: plan.steps.map((s) => s.name),
    notInBare: plan.others,
    scheduleFires: execs.length,
  };
}

async function readIds(b: Bench, ids: string[]): Promise<Reading> {
  const execs: Execution[] = [];
  for (const id of ids) {
    const h = await b.observer.workflow.getHandle(id).fetchHistory();
    execs.push({ workflowId: id, runId: '', type: 'bareWorkflow', events: h.events ?? [] });
  }
  return sumReadings(Object.values(readByType(execs)));
}

const mergeCounts = (xs: Record<string, number>[]) =>
  xs.reduce<Record<string, number>>((m, x) => {
    for (const [k, n] of Object.entries(x)) m[k] = (m[k] ?? 0) + n;
    return m;
  }, {});

/** One path on a task queue of its own, with the deployment's worker and supervisor there: drive it, let it settle, read what it cost. */
async function measurePath(b: Bench, path: PathDef) {
  const taskQueue = `cost-${path.name}-${b.tag}`;
  const link = b.app.supervisorLink(b.entry, taskQueue);
  const gate = b.app.gate(b.entry, taskQueue, { supervisor: link, decisionWaitMs: 30_000 });
  const worker = await b.app.worker({ connection: b.connection, namespace: b.namespace, taskQueue, workflowBundle: b.workflowBundle });
  const t = { fromMs: 0, toMs: 0 };
  // The worker (and so the supervisor) stays up after the path settled: the supervisor's reads of the
  // path's last runs and its quiet reads until it is idle again are the path's too (see supervisorTail).
  const running = worker.run();
  // As `npm start` brings the supervisor up before the first wake; its start-up (its first read of
  // closed runs, a watch of its own) is not the path's: the path starts once it is idle.
  await link.ensure(true);
  await sleep(3000);
  await supervisorIdle(b, link.workflowId);
  b.rpc.take();
  t.fromMs = Date.now();
  const driven = await path.drive({
    tag: b.tag,
    taskQueue,
    app: b.app,
    gate,
    link,
    entry: b.entry,
    observer: b.observer,
    wakes: WAKES,
    eventsPerKey: EVENTS_PER_KEY,
  });
  await gate.close();
  await settle(b.observer, taskQueue, driven.minRuns, link.workflowId);
  t.toMs = Date.now();
  const queries = b.rpc.take().QueryWorkflow ?? 0;
  const execs = (await executions(b.observer, `TaskQueue = "${taskQueue}"`)).filter((x) => x.workflowId !== link.workflowId);
  const byType = readByType(execs);
  const runs = execs.filter((x) => x.type === 'runWorkflow');
  const wakes = runs.length;
  const run = byType.runWorkflow!;
  const coalescer = byType.coalescerWorkflow;
  const others = sumReadings(
    Object.entries(byType)
      .filter(([type]) => type !== 'runWorkflow' && type !== 'coalescerWorkflow')
      .map(([, r]) => r),
  );
  const scheduleStarts = 2 * (driven.scheduleFires ?? 0);
  const wakeActions = actionsOf(run) + (coalescer ? actionsOf(coalescer) : 0) + actionsOf(others) + scheduleStarts + queries;
  const bare = driven.scheduleFires ? await bareSchedule(b, runs, driven.scheduleFires) : await bareBeside(b, path.name, runs);
  const bareActions = (actionsOf(bare.read) + 2 * bare.scheduleFires) / bare.runs;
  const perWakeActions = wakeActions / wakes;
  const problems = [
    ...driven.problems,
    ...(wakes !== driven.minRuns && !driven.scheduleFires ? [`${path.name}: ${wakes} runs, expected ${driven.minRuns}`] : []),
  ];
  const wakeLine = `${path.name.padEnd(13)} wakes ${wakes}  actions/wake ${r3(perWakeActions)}  bare ${r3(bareActions)}  ratio ${r3(perWakeActions / bareActions)}`;
  /** Once the supervisor is idle again: the path's figures with its share. */
  const finish = async () => {
    const tail = await supervisorTail(b, link.workflowId, t.toMs);
    worker.shutdown();
    await running;
    const supervisor = sumReadings(Object.values(readByType(tail.execs, { fromMs: t.fromMs, toMs: tail.untilMs })));
    if (!tail.idleAgain) problems.push(`${path.name}: the supervisor was not idle again within ${TAIL_S} s of the path settling; its share is counted to then`);
    return {
      result: {
        label: path.label,
        agent: path.agent,
        events: driven.events,
        wakes,
        eventsPerWake: r3(driven.events / wakes),
        answers: driven.answers,
        outcomes: mergeCounts(runs.map((x) => ({ [outcomeOf(x.events).reason]: 1 }))),
        // One run's summary for each way the runs ended but success: what the figures of such a run stand for.
        outcomeSummaries: Object.fromEntries(
          runs
            .map((x) => outcomeOf(x.events))
            .filter((o) => o.reason !== 'success' && o.summary)
            .map((o) => [o.reason, o.summary!]),
        ),
        seconds: Math.round((t.toMs - t.fromMs) / 100) / 10,
        historyEventsPerWake: {
          run: r3(run.events / wakes),
          coalescer: r3((coalescer?.events ?? 0) / wakes),
          other: r3(others.events / wakes),
          supervisor: r3(supervisor.events / wakes),
        },
        actionsPerWake: {
          run: r3(actionsOf(run) / wakes),
          coalescer: r3((coalescer ? actionsOf(coalescer) : 0) / wakes),
          other: r3(actionsOf(others) / wakes),
          scheduleStarts: r3(scheduleStarts / wakes),
          queries: r3(queries / wakes),
          wake: r3(perWakeActions),
          supervisor: r3(actionsOf(supervisor) / wakes),
          withSupervisor: r3(perWakeActions + actionsOf(supervisor) / wakes),
        },
        wakeByKind: perWake(sumReadings([run, ...(coalescer ? [coalescer] : []), others]).actions, wakes),
        supervisorByKind: perWake(supervisor.actions, wakes),
        workflows: Object.fromEntries(Object.entries(byType).map(([type, r]) => [type, { executions: r.executions, events: r.events, actions: actionsOf(r) }])),
        bare: {
          runs: bare.runs,
          steps: bare.steps,
          notInBare: bare.notInBare,
          historyEvents: r3(bare.read.events / bare.runs),
          actions: r3(bareActions),
          byKind: perWake(bare.read.actions, bare.runs),
          ...(bare.scheduleFires ? { scheduleStarts: 2 } : {}),
        },
        overBare: r3(perWakeActions / bareActions),
        ...(driven.events > wakes ? { perEventOverBare: r3(perWakeActions / (driven.events / wakes) / bareActions) } : {}),
        supervisorSpan: { secondsAfterSettled: r3((tail.untilMs - t.toMs) / 1000), idleAgain: tail.idleAgain },
      },
      problems,
    };
  };
  return { wakeLine, finish };
}

/** Until the supervisor has no activity in flight (its start-up watch came back): it is idle. */
async function supervisorIdle(b: Bench, workflowId: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while ((await b.observer.workflow.getHandle(workflowId).describe()).raw.pendingActivities?.length) {
    if (Date.now() > deadline) throw new Error(`the supervisor ${workflowId} was not idle within 120 s of its start`);
    await sleep(500);
  }
  await sleep(500);
}

/**
 * When the supervisor of a path is idle again: the first timer it started after the path settled for
 * longer than its longest active wait (MAX_QUIET_OBSERVE_MS) is its idle read's. Its share runs from
 * the first wake to that timer, not counting it: what the path made it do, its reads of the path's last
 * runs and its quiet reads until idle included (a supervisor stopped at `settle` would never make them).
 * Waits at most TAIL_S.
 */
async function supervisorTail(b: Bench, workflowId: string, settledMs: number): Promise<{ execs: Execution[]; untilMs: number; idleAgain: boolean }> {
  const deadline = settledMs + TAIL_S * 1000;
  for (;;) {
    const execs = await executions(b.observer, `WorkflowId = "${workflowId}"`);
    const idleTimer = execs
      .flatMap((x) => x.events)
      .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED && eventTimeMs(e) > settledMs)
      .find((e) => {
        const d = e.timerStartedEventAttributes?.startToFireTimeout;
        return Number(d?.seconds ?? 0) * 1000 + Math.floor((d?.nanos ?? 0) / 1e6) > MAX_QUIET_OBSERVE_MS;
      });
    if (idleTimer) return { execs, untilMs: eventTimeMs(idleTimer) - 1, idleAgain: true };
    if (Date.now() > deadline) return { execs, untilMs: deadline, idleAgain: false };
    await sleep(5000);
  }
}

/** A worker on a queue of its own and no wake: every workflow's actions there over the idle window, per hour. */
async function idleFleet(b: Bench) {
  const taskQueue = `cost-idle-${b.tag}`;
  const link = b.app.supervisorLink(b.entry, taskQueue);
  const worker = await b.app.worker({ connection: b.connection, namespace: b.namespace, taskQueue, workflowBundle: b.workflowBundle });
  const running = worker.run();
  await link.ensure(true);
  const fromMs = Date.now() + IDLE_START_S * 1000;
  const toMs = fromMs + IDLE_S * 1000;
  return {
    async read() {
      await sleep(Math.max(0, toMs - Date.now()));
      worker.shutdown();
      await running;
      const execs = await executions(b.observer, `TaskQueue = "${taskQueue}"`);
      const byType = readByType(execs, { fromMs, toMs });
      const all = sumReadings(Object.values(byType));
      const perHour = (n: number) => r3((n / IDLE_S) * 3600);
      const activities: Record<string, number> = {};
      for (const x of execs)
        for (const [k, n] of Object.entries(activitiesOf(x.events.filter((e) => inWindow(e, fromMs, toMs))).others)) activities[k] = (activities[k] ?? 0) + n;
      return {
        seconds: IDLE_S,
        afterStartS: IDLE_START_S,
        historyEvents: all.events,
        actions: actionsOf(all),
        actionsPerHour: perHour(actionsOf(all)),
        byKindPerHour: Object.fromEntries(ACTION_KINDS.filter((k) => all.actions[k] > 0).map((k) => [k, perHour(all.actions[k])])),
        activities,
        continuedAsNew: execs.filter((x) =>
          x.events.some((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW && inWindow(e, fromMs, toMs)),
        ).length,
        workflows: Object.fromEntries(Object.entries(byType).map(([type, r]) => [type, { runs: r.executions, events: r.events, actions: actionsOf(r) }])),
      };
    },
  };
}
const inWindow = (e: temporal.api.history.v1.IHistoryEvent, fromMs: number, toMs: number) => eventTimeMs(e) >= fromMs && eventTimeMs(e) <= toMs;

async function main(): Promise<void> {
  const recorder = benchRecorder('cost', {
    wakesPerPath: WAKES,
    eventsPerKey: EVENTS_PER_KEY,
    idleSeconds: IDLE_S,
    actions: `Temporal Cloud's published list, ${ACTIONS_SOURCE}, applied to history events (tools/bench/cost-actions.ts)`,
    deployment:
      "the examples' (createWakegate: the canary, the dependency bump, their triggers, webhook sources and supervisor policy) with the soak's notes agent (overlap steer; one more tool call in its budget, for its effect); offline model; local stand-ins",
    worker: "the deployment's own worker (app.worker), one task queue per path, the supervisor brought up first as npm start does",
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; the workers in the benchmark process',
    wake: "the runs' histories, the coalescers' and any other workflow's on the path's queue, a Schedule's two actions per fire, the entry process's queries",
    supervisorShare:
      "its events written from the first wake until it is idle again (its first timer longer than its longest active wait, after the path settled; the path's worker up meanwhile), over the wakes",
    bare: "tools/bench/bare-workflow.ts making each run's steps (prepareRun, toolCall, modelTurn, commitEffect) with the run's inputs; for windows, a bare Temporal Schedule",
    notCounted: 'activity heartbeats that reach the server, validator-rejected updates, workflow task heartbeats: billable, but in no history',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const standins = await startStandins();
  const rpc = rpcCounter();
  const config = loadConfig(standinSettings(standins.urls));
  // The soak's notes agent has room for its one tool call and no more, so that its runs end
  // budget_exhausted before their effect (the soak's case); here a steer wake is one that ends in its effect.
  const notes = { ...notesAgent, policy: { ...notesAgent.policy, budget: { ...notesAgent.policy.budget, toolCalls: notesAgent.policy.budget.toolCalls + 1 } } };
  const app = createWakegate({
    ...exampleOptions,
    agents: [...exampleOptions.agents, notes],
    triggers: [...exampleOptions.triggers, notesTrigger],
    config,
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const b: Bench = {
    tag: randomUUID().slice(0, 8),
    app,
    namespace: server.namespace,
    connection,
    entry: new Client({ connection: await Connection.connect({ address: server.address, interceptors: [rpc.interceptor] }), namespace: server.namespace }),
    observer: new Client({ connection: await Connection.connect({ address: server.address }), namespace: server.namespace }),
    rpc,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') }),
    bareQueue: '',
  };
  b.bareQueue = `cost-bare-${b.tag}`;
  const bareWorker = await Worker.create({
    connection,
    namespace: server.namespace,
    taskQueue: b.bareQueue,
    activities: app.activities(),
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflow'), logger: new DefaultLogger('WARN') }),
  });
  const bareRunning = bareWorker.run();
  const problems: string[] = [];
  try {
    const idle = await idleFleet(b);
    const paths: Record<string, Awaited<ReturnType<Awaited<ReturnType<typeof measurePath>>['finish']>>['result']> = {};
    const measured: { name: string; finish: Awaited<ReturnType<typeof measurePath>>['finish'] }[] = [];
    for (const path of PATHS) {
      const m = await measurePath(b, path);
      measured.push({ name: path.name, finish: m.finish });
      console.log(m.wakeLine);
    }
    // The paths' supervisors wind down side by side, each on its own queue with its worker up.
    console.log('supervisors: waiting until each is idle again');
    for (const { name, finish } of await Promise.all(measured.map(async (x) => ({ name: x.name, finish: await x.finish() })))) {
      paths[name] = finish.result;
      problems.push(...finish.problems);
      const a = finish.result.actionsPerWake;
      console.log(`${name.padEnd(13)} supervisor ${a.supervisor} per wake, idle again ${finish.result.supervisorSpan.secondsAfterSettled} s after settling`);
    }
    console.log(`idle: waiting for the end of its ${IDLE_S} s window`);
    const idleResult = await idle.read();
    console.log(`idle: ${idleResult.actions} actions in ${IDLE_S} s: ${idleResult.actionsPerHour} an hour`);
    const p = (name: string) => paths[name]!;
    const targets: Target[] = [
      atMost("a wake's actions over the bare workflow's", p('oneCall').overBare, TARGETS.oneCallOverBare, 'oneCall'),
      atMost("a wake's actions over the bare workflow's", p('coalescedOne').overBare, TARGETS.coalescedOneOverBare, 'coalescedOne'),
      atMost(
        `actions per event (${EVENTS_PER_KEY} a wake) over the bare workflow's`,
        p('coalescedTen').perEventOverBare ?? NaN,
        TARGETS.coalescedManyPerEventOverBare,
        'coalescedTen',
      ),
      ...Object.entries(paths).map(([name, r]) => atMost('supervisor actions per wake', r.actionsPerWake.supervisor, TARGETS.supervisorPerWake, name)),
      atMost('idle fleet, actions per hour', idleResult.actionsPerHour, TARGETS.idlePerHour),
    ];
    const report = {
      source: ACTIONS_SOURCE,
      occurredAt: OCCURRED_AT,
      paths,
      idle: { ...idleResult, target: TARGETS.idlePerHour, met: idleResult.actionsPerHour <= TARGETS.idlePerHour },
      targets,
    };
    for (const t of targets) console.log(`${t.met ? 'met   ' : 'MISSED'} ${t.path ? `${t.path}: ` : ''}${t.figure}: ${t.value} (target <= ${t.target})`);
    await recorder.write(report, problems);
    if (problems.length) console.error(problems.join('\n'));
  } finally {
    bareWorker.shutdown();
    await bareRunning;
    await b.entry.connection.close();
    await b.observer.connection.close();
    await connection.close();
    await standins.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
