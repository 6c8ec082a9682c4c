import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DevServer } from '../devserver/dev-server';
import { withPolicies } from '../agents/registry';
import { Gate } from '../gate/gate';
import type { GateAnswer } from '../gate/decision';
import { coalescerQuery } from '../core/messages';
import { SupervisorLink } from '../supervisor/link';
import { withSupervisorPolicy } from '../supervisor/policy';
import { createWakeWorker } from '../runtime/worker';
import { histograms, percentile, round } from './stats';
import { registryOf, activitiesOf, exampleAgents } from '../test/helpers/app';
import { benchRecorder } from './results';

/**
 * `npm run bench:coalesce`: the coalescing path on one dev server, with a worker in this process.
 * 1. One wake key: BENCH_EVENTS (10,000) distinct events offered at a steady rate over BENCH_SECONDS
 *    (60 s), open loop (a send every 60 s / 10,000, at most BENCH_IN_FLIGHT answers outstanding).
 *    Reports the rate achieved, p50/p99 of the answers, runs started (bound: seconds / maxWait + 1),
 *    the coalescer's history length and how often it continued as new, and this process's RSS.
 * 2. BENCH_KEYS (1,000) wake keys with 10 events each, key after key, as fast as the in-flight cap
 *    allows: rate, p50/p99, runs started.
 * The agent is the canary with a coalescing policy (debounce 1 s, maxWait 5 s, skip while running):
 * the run itself costs two short activities, so what is measured is the gate, its offers to the
 * coalescer and the coalescer.
 * The supervisor is on, with a benchmark policy: this load is a wake storm by the default policy
 * (600 wakes a minute) and phase 2 starts more runs than its fleet cap of 1,000 an hour, so the
 * thresholds are raised out of the way; the fleet cap stays (1,000,000 runs an hour), so every run
 * still takes its permit from the supervisor at its first step.
 */
const BENCH_POLICY = withSupervisorPolicy({
  storm: { fleetPerMinute: 1_000_000, agentPerMinute: 1_000_000, rationale: 'bench:coalesce offers ~170 events/s on purpose: not a storm here.' },
  caps: { fleet: [{ windowMs: 3_600_000, wakes: 1_000_000, rationale: 'bench:coalesce: a cap every run takes a permit from, never reached.' }], agents: {} },
});
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const KEYS = Number(process.env.BENCH_KEYS ?? 1000);
const PER_KEY = 10;
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 200);
const MAX_WAIT_MS = 5000;

const mb = (bytes: number) => round(bytes / 1024 / 1024, 0);

/** Send `n` offers, one every `intervalMs` (0: as fast as the cap allows), with at most IN_FLIGHT unanswered. */
async function openLoop(n: number, intervalMs: number, send: (i: number) => Promise<GateAnswer>) {
  const latencies: number[] = [];
  const answers: GateAnswer[] = [];
  /** When each answer came, ms after the first offer, in the order of `answers`. */
  const answeredAtMs: number[] = [];
  const errors: string[] = [];
  let inFlight = 0;
  let throttled = 0;
  const done: Promise<void>[] = [];
  const t0 = performance.now();
  const startedAt = Date.now();
  for (let i = 0; i < n; i++) {
    const due = t0 + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    while (inFlight >= IN_FLIGHT) {
      throttled++;
      await new Promise((r) => setTimeout(r, 2));
    }
    inFlight++;
    const s = performance.now();
    done.push(
      send(i)
        .then(
          (a) => {
            latencies.push(performance.now() - s);
            answers.push(a);
            answeredAtMs.push(performance.now() - t0);
          },
          (err: unknown) => {
            errors.push((err as Error).message);
          },
        )
        .finally(() => inFlight--),
    );
  }
  await Promise.all(done);
  const seconds = (performance.now() - t0) / 1000;
  return {
    seconds,
    rate: n / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    latencies,
    answers,
    answeredAtMs,
    startedAt,
    errors,
    throttled,
  };
}

/**
 * The hot key over time, for the chart: its answers per second since the first offer, by decision,
 * and each of its runs from start to end (seconds since the first offer; a run still open has no end).
 */
async function hotKeyTimeline(client: Client, wakeKey: string, loop: Awaited<ReturnType<typeof openLoop>>) {
  const answersPerSecond: Record<string, number[]> = {};
  loop.answers.forEach((a, i) => {
    const perSecond = (answersPerSecond[a.decision] ??= []);
    const s = Math.floor(loop.answeredAtMs[i]! / 1000);
    while (perSecond.length <= s) perSecond.push(0);
    perSecond[s]!++;
  });
  const sinceStart = (d: Date) => round((d.getTime() - loop.startedAt) / 1000);
  const runs: { startS: number; endS?: number }[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowType = "runWorkflow" AND WakeKey = "${wakeKey}"` })) {
    runs.push({ startS: sinceStart(wf.startTime), ...(wf.closeTime ? { endS: sinceStart(wf.closeTime) } : {}) });
  }
  runs.sort((a, b) => a.startS - b.startS);
  return { answersPerSecond, runs };
}

async function main(): Promise<void> {
  const recorder = benchRecorder('coalesce', {
    hotKeyEvents: EVENTS,
    hotKeySeconds: SECONDS,
    keys: KEYS,
    eventsPerKey: PER_KEY,
    maxInFlight: IN_FLIGHT,
    policy: { debounceMs: 1000, maxWaitMs: MAX_WAIT_MS, whileRunning: 'skip' },
    agent: 'canary with a coalescing policy (its run: two short activities)',
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; the worker in the benchmark process',
    supervisor: 'on, with a benchmark policy: storm thresholds raised out of the way, every run takes a permit at its first step',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const connection = await NativeConnection.connect({ address: server.address });
  const agents = withPolicies(exampleAgents, (d) =>
    d.policy.name === 'canary'
      ? {
          coalesce: {
            debouncePeriodMs: 1000,
            maxWaitMs: MAX_WAIT_MS,
            whileRunning: 'skip',
            idleCloseMs: 120_000,
            dedupHorizonMs: 3_600_000,
            maxEventsPerRun: 1000,
          },
        }
      : undefined,
  );
  const tag = randomUUID().slice(0, 8);
  const taskQueue = `bench-coalesce-${tag}`;
  const supervisor = new SupervisorLink({ client, taskQueue, policy: BENCH_POLICY });
  const gate = new Gate({ client, taskQueue, registry: registryOf(agents), decisionWaitMs: 60_000, supervisor });
  const worker = await createWakeWorker({
    connection,
    namespace: server.namespace,
    taskQueue,
    activities: activitiesOf({ agents, supervisor: BENCH_POLICY }),
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') }),
  });
  const occurredAt = '2026-12-02T10:00:00Z';
  const runsAbout = (wakeKey: string) => client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${wakeKey}"`).then((c) => c.count);
  try {
    await worker.runUntil(async () => {
      // Warm-up: connections, the bundle's first tasks, server caches.
      for (let i = 0; i < 50; i++) await gate.admit({ source: 'ping', entity: `warm-${tag}`, type: `w-${i}`, occurredAt });
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;

      const hot = `hot-${tag}`;
      const one = await openLoop(EVENTS, (SECONDS * 1000) / EVENTS, (i) =>
        gate.admit({ source: 'ping', entity: hot, type: `e-${i}`, occurredAt, deliveryId: `d-${i}` }),
      );
      const rssAfterHot = process.memoryUsage().rss;
      const coalescerId = one.answers[0]!.coalescerId!;
      const status = await client.workflow.getHandle(coalescerId).query(coalescerQuery);
      const executions = (await client.workflow.count(`WorkflowId = "${coalescerId}"`)).count;
      // Let the last batch run before counting runs.
      await new Promise((r) => setTimeout(r, MAX_WAIT_MS + 3000));
      const hotRuns = await runsAbout(hot);
      const decisions: Record<string, number> = {};
      for (const a of one.answers) decisions[a.decision] = (decisions[a.decision] ?? 0) + 1;
      const timeline = await hotKeyTimeline(client, hot, one);

      const many = await openLoop(KEYS * PER_KEY, 0, (i) =>
        gate.admit({ source: 'ping', entity: `k-${tag}-${Math.floor(i / PER_KEY)}`, type: `e-${i % PER_KEY}`, occurredAt }),
      );
      await new Promise((r) => setTimeout(r, MAX_WAIT_MS + 5000));
      const manyRuns = (await client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey STARTS_WITH "k-${tag}-"`)).count;
      const rssAfterMany = process.memoryUsage().rss;

      // Both phases' answer times on one bin width, so their distributions can be drawn side by side.
      const hist = histograms({ one: one.latencies, many: many.latencies });
      const report = {
        hotKey: {
          offered: EVENTS,
          offeredPerSecond: round(EVENTS / SECONDS),
          achievedPerSecond: round(one.rate),
          seconds: round(one.seconds),
          answerMs: { p50: round(one.p50), p99: round(one.p99), histogram: hist.one },
          decisions,
          errors: one.errors.length,
          firstError: one.errors[0],
          runsStarted: hotRuns,
          runBound: Math.floor(one.seconds / (MAX_WAIT_MS / 1000)) + 1,
          coalescerExecutions: executions,
          coalescerHistoryLength: status.historyLength,
          timeline,
        },
        manyKeys: {
          keys: KEYS,
          eventsPerKey: PER_KEY,
          achievedPerSecond: round(many.rate),
          answerMs: { p50: round(many.p50), p99: round(many.p99), histogram: hist.many },
          runsStarted: manyRuns,
          errors: many.errors.length,
        },
        rssMb: { before: mb(rssBefore), afterHotKey: mb(rssAfterHot), afterManyKeys: mb(rssAfterMany) },
      };
      console.log(JSON.stringify(report, null, 2));
      const problems = [
        ...(one.errors.length + many.errors.length > 0
          ? [`${one.errors.length + many.errors.length} offers failed (first: ${one.errors[0] ?? many.errors[0]})`]
          : []),
        ...(hotRuns > report.hotKey.runBound ? [`the hot key started ${hotRuns} runs, over its bound of ${report.hotKey.runBound}`] : []),
      ];
      await recorder.write(report, problems);
      if (problems.length > 0) {
        console.error(problems.join('\n'));
        process.exitCode = 1;
      }
    });
  } finally {
    await gate.close();
    await client.connection.close();
    await connection.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
