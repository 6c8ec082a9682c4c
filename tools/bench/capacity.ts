import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { loadConfig } from '../../src/config/config';
import { DevServer } from '../../src/testing/dev-server';
import { RedisServer } from '../devserver/redis-server';
import type { AgentRegistry } from '../../src/agents/registry';
import { Gate } from '../../src/gate/gate';
import { queueHandler } from '../../src/trigger/queue/handler';
import { QueueMetrics } from '../../src/trigger/queue/metrics';
import { publish, RedisStreamsConsumer } from '../../src/trigger/queue/redis-streams';
import { startIngress } from '../../src/processes/ingress-listeners';
import { defineWebhookSource } from '../../src/trigger/webhook/source';
import { defineSchedule } from '../../schedules/definition';
import { toScheduleOptions } from '../../schedules/to-temporal';
import { createWakeWorker } from '../../src/runtime/worker';
import { activitiesOf, exampleAgents, registryOf } from '../../test/helpers/app';
import { coalescing } from '../../test/helpers/agents';
import { addCounts, historyCosts, perEvent, rpcCounter, zeroCounts, type OpCounts } from './capacity-count';
import { CLUSTER_ASSUMPTION } from './capacity-model';
import { benchRecorder } from './results';

/**
 * `npm run bench:capacity`: what each path costs Temporal per event, counted, on a dev server of its
 * own with a worker in this process. Each path runs alone on a task queue of its own (so with a
 * supervisor of its own) and drives a small known number of events; once every run, tick and
 * coalescer on that queue has closed, every execution's history on the queue is read and counted
 * (workflow starts, workflow tasks, activity tasks, updates, signals, timers, history events and
 * bytes), and the gRPC calls the entry process made are counted by method. The supervisor's share is
 * kept apart: it grows with time (a visibility read every few seconds while the fleet is active) as
 * well as with events. Paths:
 * - `oneCall`: BENCH_EVENTS ping events through the gate one after another (the canary, one-call);
 * - `permitBurst`: as many at once, so the worker's link leases permits in blocks;
 * - `coalesceHotKey`: as many at once on one wake key of a coalescing canary;
 * - `coalesceHotKeyPaced`: BENCH_PACED events on one wake key, one every 50 ms (a key that stays hot:
 *   offers batch less, and a run is opened every maxWait);
 * - `coalesceSpread`: as many at once, each on a wake key of its own;
 * - `webhook`: as many signed webhooks (Standard Webhooks) to an ingress in this process;
 * - `queue`: as many messages on a Redis stream, drained by one consumer through the gate;
 * - `schedule`: a Schedule firing every 2 s for BENCH_WINDOWS windows (its run started directly).
 * Env: BENCH_EVENTS (20), BENCH_PACED (100), BENCH_WINDOWS (5).
 */
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20);
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 5);
const PACED = Number(process.env.BENCH_PACED ?? 100);
const PACE_MS = 50;
const OCCURRED_AT = '2026-12-02T10:00:00Z';
const SETTLE_TIMEOUT_MS = 180_000;
const COALESCE = { debouncePeriodMs: 300, maxWaitMs: 2000, whileRunning: 'skip' as const, idleCloseMs: 2000, dedupHorizonMs: 2000 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Standard Webhooks source feeding the `ping` trigger: the canary, as on the other paths. */
const benchSource = defineWebhookSource({
  name: 'bench-ping',
  trigger: 'ping',
  scheme: 'standard-webhooks',
  // base64 of "bench-capacity-secret"
  devSecret: 'whsec_YmVuY2gtY2FwYWNpdHktc2VjcmV0',
  body: z.object({ entity: z.string().min(1).max(200), type: z.string().min(1).max(100) }),
  map: (body, ctx) => ({
    kind: 'event',
    event: { source: 'ping', entity: body.entity, type: body.type, occurredAt: OCCURRED_AT, deliveryId: ctx.headers['webhook-id'] },
  }),
});

/** What a path's driver has to hand. */
interface PathContext {
  tag: string;
  taskQueue: string;
  gate: Gate;
  entry: Client;
  observer: Client;
  redis: Redis;
  agents: AgentRegistry;
}

/** One path: its agents, how many events it drives, and the driver (returns the runs to wait for, and a Schedule's id). */
interface Path {
  name: string;
  agents: AgentRegistry;
  events: number;
  drive: (ctx: PathContext) => Promise<{ minRuns: number; scheduler?: string }>;
}

interface PathResult {
  events: number;
  runs: number;
  seconds: number;
  /** Everything on the path but the supervisor, per event. */
  perEvent: OpCounts;
  /** The supervisor's share (leases, wake-count signals, its own reads), per event. */
  supervisorPerEvent: OpCounts;
  byType: Record<string, OpCounts>; // totals by workflow type
  rpc: Record<string, number>; // the entry process's gRPC calls by method, in total
  rpcPerEvent: number;
  missing: string[]; // executions looked for by ID and not found
}

/** Wait until the queue's runs, ticks and coalescers have all closed and at least `minRuns` runs exist; returns the runs. */
async function settle(observer: Client, taskQueue: string, minRuns: number): Promise<number> {
  const count = (q: string) => observer.workflow.count(`TaskQueue = "${taskQueue}" AND ${q}`).then((c) => c.count);
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let stable = 0;
  while (Date.now() < deadline) {
    const open = await count(
      `ExecutionStatus = "Running" AND WorkflowType IN ("runWorkflow", "coalescerWorkflow", "scheduleTickWorkflow", "subagentWorkflow")`,
    );
    const runs = await count(`WorkflowType = "runWorkflow"`);
    if (open === 0 && runs >= minRuns) {
      if (++stable >= 2) return runs;
    } else stable = 0;
    await sleep(1000);
  }
  throw new Error(`task queue ${taskQueue} did not settle within ${SETTLE_TIMEOUT_MS} ms`);
}

const each = (n: number, f: (i: number) => Promise<unknown>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
const ping = (gate: Gate, entity: string, type: string) => gate.admit({ source: 'ping', entity, type, occurredAt: OCCURRED_AT });

/** Send the signed webhooks of the webhook path to an ingress in this process. */
async function webhooks({ tag, taskQueue, entry, agents }: PathContext): Promise<void> {
  const ingress = await startIngress({
    client: entry,
    taskQueue,
    registry: registryOf(agents),
    sources: [benchSource],
    config: { ...loadConfig({}).ingress, port: 0, operatorPort: 0, ratePerSecond: 1e6, burst: 1e6, maxInFlight: 4 * EVENTS },
    allowDevSecrets: true,
  });
  const webhook = new Webhook(benchSource.devSecret);
  try {
    await each(EVENTS, async (i) => {
      const body = JSON.stringify({ entity: `wh-${tag}-${i}`, type: 'bench' });
      const id = `wh-${tag}-${i}`;
      const at = new Date();
      const res = await fetch(`${ingress.url}/webhooks/bench-ping`, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': webhook.sign(id, at, body),
        },
      });
      if (res.status !== 202) throw new Error(`webhook: expected 202, got ${res.status}: ${await res.text()}`);
    });
  } finally {
    await ingress.close();
  }
}

/** Publish the queue path's messages and drain them with one consumer through the gate. */
async function queueMessages({ tag, gate, entry, redis }: PathContext): Promise<void> {
  for (let i = 0; i < EVENTS; i++) await publish(redis, { source: 'ping', entity: `q-${tag}-${i}`, type: 'bench', occurredAt: OCCURRED_AT });
  const metrics = new QueueMetrics(new Registry());
  const consumer = new RedisStreamsConsumer({ redis, sources: ['ping'], claimIdleMs: 60_000, batch: EVENTS, blockMs: 100, metrics });
  const consuming = consumer.run(queueHandler({ gate, client: entry, temporalTimeoutMs: 10_000, maxAttempts: 5 }));
  while ((await metrics.accepted.get()).values.reduce((s, v) => s + v.value, 0) < EVENTS) await sleep(20);
  await consumer.stop();
  await consuming;
}

/** A Schedule firing every 2 s until WINDOWS runs exist, then deleted. */
async function scheduleWindows({ tag, taskQueue, entry, observer, agents }: PathContext): Promise<string> {
  const def = defineSchedule({
    id: `cap-${tag}`,
    description: 'bench:capacity',
    agent: 'canary',
    cadence: 'fixed_rate',
    spec: { every: '2s' },
    overlap: 'buffer_all',
    catchUp: 'all',
    rationale: 'bench:capacity: every window runs, so each costs what a window costs',
  });
  const handle = await entry.schedule.create(toScheduleOptions(def, taskQueue, registryOf(agents)));
  const fired = () => observer.workflow.count(`TaskQueue = "${taskQueue}" AND WorkflowType = "runWorkflow"`).then((c) => c.count);
  while ((await fired()) < WINDOWS) await sleep(500);
  await handle.delete();
  return def.id;
}

const hot = coalescing('canary', COALESCE);
const PATHS: Path[] = [
  {
    name: 'oneCall',
    agents: exampleAgents,
    events: EVENTS,
    drive: async ({ tag, gate }) => {
      for (let i = 0; i < EVENTS; i++) await ping(gate, `one-${tag}-${i}`, 'bench');
      return { minRuns: EVENTS };
    },
  },
  {
    name: 'permitBurst',
    agents: exampleAgents,
    events: EVENTS,
    drive: async ({ tag, gate }) => (await each(EVENTS, (i) => ping(gate, `burst-${tag}-${i}`, 'bench')), { minRuns: EVENTS }),
  },
  {
    name: 'coalesceHotKey',
    agents: hot,
    events: EVENTS,
    drive: async ({ tag, gate }) => (await each(EVENTS, (i) => ping(gate, `hot-${tag}`, `e-${i}`)), { minRuns: 1 }),
  },
  {
    name: 'coalesceHotKeyPaced',
    agents: hot,
    events: PACED,
    drive: async ({ tag, gate }) => {
      const answers: Promise<unknown>[] = [];
      for (let i = 0; i < PACED; i++) {
        answers.push(ping(gate, `paced-${tag}`, `e-${i}`));
        await sleep(PACE_MS);
      }
      await Promise.all(answers);
      return { minRuns: 1 };
    },
  },
  {
    name: 'coalesceSpread',
    agents: hot,
    events: EVENTS,
    drive: async ({ tag, gate }) => (await each(EVENTS, (i) => ping(gate, `spread-${tag}-${i}`, 'bench')), { minRuns: EVENTS }),
  },
  { name: 'webhook', agents: exampleAgents, events: EVENTS, drive: async (ctx) => (await webhooks(ctx), { minRuns: EVENTS }) },
  { name: 'queue', agents: exampleAgents, events: EVENTS, drive: async (ctx) => (await queueMessages(ctx), { minRuns: EVENTS }) },
  { name: 'schedule', agents: exampleAgents, events: WINDOWS, drive: async (ctx) => ({ minRuns: WINDOWS, scheduler: await scheduleWindows(ctx) }) },
];

/** The bench's connections, shared by every path. */
interface Bench {
  namespace: string;
  tag: string;
  entry: Client;
  observer: Client;
  connection: NativeConnection;
  workflowBundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
  redis: Redis;
  rpc: ReturnType<typeof rpcCounter>;
}

/** Run one path on a task queue of its own, wait until it settles, and count what it cost. */
async function measure(b: Bench, path: Path): Promise<PathResult> {
  const taskQueue = `cap-${path.name}-${b.tag}`;
  const { agents, events } = path;
  const gate = new Gate({ client: b.entry, taskQueue, registry: registryOf(agents), decisionWaitMs: 30_000 });
  const worker = await createWakeWorker({
    connection: b.connection,
    namespace: b.namespace,
    taskQueue,
    activities: activitiesOf({ agents }),
    workflowBundle: b.workflowBundle,
  });
  b.rpc.take();
  const t0 = performance.now();
  let runs = 0;
  let scheduler: string | undefined;
  await worker.runUntil(async () => {
    const d = await path.drive({ tag: b.tag, taskQueue, gate, entry: b.entry, observer: b.observer, redis: b.redis, agents });
    scheduler = d.scheduler;
    await gate.close();
    runs = await settle(b.observer, taskQueue, d.minRuns);
  });
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  const calls = b.rpc.take();
  const extra = scheduler ? [{ type: 'temporal-sys-scheduler', workflowId: `temporal-sys-scheduler:${scheduler}` }] : [];
  const { byType, missing } = await historyCosts(b.observer, `TaskQueue = "${taskQueue}"`, extra);
  const onPath = Object.entries(byType)
    .filter(([type]) => type !== 'supervisorWorkflow')
    .reduce((s, [, c]) => addCounts(s, c), zeroCounts());
  // A Schedule may fire once more between the count and its deletion: each window is an event.
  const n = scheduler ? runs : events;
  return {
    events: n,
    runs,
    seconds,
    perEvent: perEvent(onPath, n),
    supervisorPerEvent: perEvent(byType.supervisorWorkflow ?? zeroCounts(), n),
    byType,
    rpc: calls,
    rpcPerEvent: Math.round((Object.values(calls).reduce((s, x) => s + x, 0) / n) * 1000) / 1000,
    missing,
  };
}

async function main(): Promise<void> {
  const recorder = benchRecorder('capacity', {
    eventsPerPath: EVENTS,
    pacedHotKey: { events: PACED, everyMs: PACE_MS },
    scheduleWindows: WINDOWS,
    agent: 'the canary (two short activities per run), one-call or with a coalescing policy',
    coalesce: COALESCE,
    supervisor: "the default policy: its fleet cap applies, so every run takes a permit; one supervisor per path's task queue",
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; the worker in the benchmark process',
    counted:
      "every execution's history on the path's task queue (visibility), plus the Schedule's own scheduler workflow by ID; the entry process's gRPC calls. Not counted: the worker's own calls (polls, the run's memo read, leases), which go over its native connection",
    cluster: CLUSTER_ASSUMPTION,
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const broker = await RedisServer.start();
  const rpc = rpcCounter();
  const b: Bench = {
    namespace: server.namespace,
    tag: randomUUID().slice(0, 8),
    entry: new Client({ connection: await Connection.connect({ address: server.address, interceptors: [rpc.interceptor] }) }),
    observer: new Client({ connection: await Connection.connect({ address: server.address }) }),
    connection: await NativeConnection.connect({ address: server.address }),
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') }),
    redis: new Redis(broker.url),
    rpc,
  };
  const paths: Record<string, PathResult> = {};
  const problems: string[] = [];
  try {
    for (const path of PATHS) {
      const r = (paths[path.name] = await measure(b, path));
      if (r.missing.length) problems.push(`${path.name}: not found by ID: ${r.missing.join(', ')}`);
      console.log(path.name, JSON.stringify(r.perEvent), `runs ${r.runs}`, `${r.seconds} s`);
    }
    const report = { paths };
    console.log(JSON.stringify(report, null, 2));
    await recorder.write(report, problems);
    if (problems.length > 0) {
      console.error(problems.join('\n'));
      process.exitCode = 1;
    }
  } finally {
    b.redis.disconnect();
    await b.entry.connection.close();
    await b.observer.connection.close();
    await b.connection.close();
    await broker.stop();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
