import { randomUUID } from 'node:crypto';
import { fork } from 'node:child_process';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DevServer } from '../../src/testing/dev-server';
import { Gate } from '../../src/gate/gate';
import { createWakeWorker } from '../../src/runtime/worker';
import type { SideDone, SideGo, SideKind } from './gate-side';
import { histograms, pairedBlockBootstrap, percentile, round, runPool, spreadOf, sum } from './stats';
import { registryOf } from '../../test/helpers/app';
import { exampleApp } from '../../test/helpers/app';
import { benchRecorder } from './results';

/**
 * `npm run bench:gate`: on one dev server in one run,
 * 1. start throughput: raw `client.workflow.start` with unique IDs vs the gate with unique keys, side
 *    by side, each in a process of its own (tools/bench/gate-side.ts) at the same concurrency, for the same
 *    SECONDS (neither has a worker: both measure the start path). The machine's load drifts and
 *    stalls (a SQLite checkpoint, a GC) within seconds; side by side, both sides meet each stall alike.
 *    The figure is the gate's completed starts over raw's; its interval a paired block bootstrap over
 *    spans of BLOCK_S seconds (both sides' counts in a span drawn together); the spread each span's
 *    own ratio;
 * 2. a storm: 1,000 concurrent deliveries of one logical event while its run is open: how many
 *    executions (visibility count; must be 1), and p50/p99 of the answers.
 * Env: BENCH_SECONDS (the window, default 90), BENCH_BLOCK_S (2), BENCH_CONCURRENCY (16 a side, 32 in all), BENCH_STORM (1000).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 90);
const BLOCK_S = Number(process.env.BENCH_BLOCK_S ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const STORM = Number(process.env.BENCH_STORM ?? 1000);
const WARM_UP = 500;

/** Fork one side, wait until it has warmed up; `run` starts its window and answers with what it completed. */
async function side(kind: SideKind, address: string, tag: string): Promise<{ run: (go: SideGo) => Promise<SideDone> }> {
  const child = fork(path.join(__dirname, 'gate-side.ts'), [kind, address, tag, String(CONCURRENCY), String(WARM_UP)], { execArgv: ['--import', 'tsx'] });
  const failed = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`bench:gate: the ${kind} side exited ${code}`))));
  failed.catch(() => undefined);
  await Promise.race([new Promise((resolve) => child.once('message', resolve)), failed]);
  return {
    run: (go) => {
      child.send(go);
      return Promise.race([new Promise<SideDone>((resolve) => child.once('message', (m) => resolve(m as SideDone))), failed]);
    },
  };
}

async function main(): Promise<void> {
  const recorder = benchRecorder('gate', {
    seconds: SECONDS,
    blockSeconds: BLOCK_S,
    warmUpStartsEach: WARM_UP,
    concurrencyEachSide: CONCURRENCY,
    stormDeliveries: STORM,
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost',
    supervisor:
      "on: the gate's default link (memo read cached per process, wake counts sent in batches); no worker polls the gate's queue, so the start path is measured alone",
    agent: 'canary (source ping): the one-call path',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  try {
    const registry = registryOf();
    const runTag = randomUUID().slice(0, 8);
    const occurredAt = '2026-12-02T14:05:00Z';

    const [rawSide, gateSide] = await Promise.all([side('raw', server.address, runTag), side('gate', server.address, runTag)]);
    const startAt = Date.now() + 500;
    const endAt = startAt + SECONDS * 1000;
    const [raw, gated] = await Promise.all([rawSide.run({ startAt, endAt }), gateSide.run({ startAt, endAt })]);
    const rawRate = raw.doneAt.length / SECONDS;
    const gateRate = gated.doneAt.length / SECONDS;
    // Each span's completed starts, a side each: a = the gate's, b = raw's.
    const spans = Math.ceil(SECONDS / BLOCK_S);
    const countBySpan = (doneAt: number[]) => {
      const counts = new Array<number>(spans).fill(0);
      for (const t of doneAt) counts[Math.min(spans - 1, Math.floor((t - startAt) / (BLOCK_S * 1000)))]!++;
      return counts;
    };
    const gateCounts = countBySpan(gated.doneAt);
    const rawCounts = countBySpan(raw.doneAt);
    const blocks = gateCounts.map((g, i) => ({ a: [g], b: [rawCounts[i]!] }));
    const interval = pairedBlockBootstrap(blocks, { stat: sum });
    const spanRatios = blocks.filter(({ b }) => b[0]! > 0).map(({ a, b }) => a[0]! / b[0]!);
    const lat = { raw: raw.latencyMs, gate: gated.latencyMs };

    // The storm: one logical event, many deliveries, its run held open by a real worker.
    const stormQueue = `bench-storm-${runTag}`;
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    const worker = await createWakeWorker({ connection: nativeConnection, namespace: 'default', taskQueue: stormQueue, activities: exampleApp.activities() });
    const stormGate = new Gate({ client, taskQueue: stormQueue, registry });
    const storm = await worker.runUntil(async () => {
      const decisions: Record<string, number> = {};
      const entity = `storm-${runTag}`;
      const latencies = await runPool(STORM, STORM, async (i) => {
        const a = await stormGate.admit({ source: 'ping', entity, type: 'storm', occurredAt, payload: { holdMs: 3000 }, deliveryId: `storm-${i}` });
        decisions[a.decision] = (decisions[a.decision] ?? 0) + 1;
        return a;
      });
      const workflowId = stormGate.key({ source: 'ping', entity, type: 'storm', occurredAt, payload: { holdMs: 3000 } }).input.runKey;
      await client.workflow.getHandle(workflowId).result();
      await new Promise((r) => setTimeout(r, 1500)); // let visibility catch up before counting
      const executions = (await client.workflow.count(`WorkflowId = "${workflowId}"`)).count;
      return { decisions, latencies, executions };
    });
    await nativeConnection.close();

    // One bin width for both series, so their distributions can be drawn side by side.
    const startHist = histograms({ raw: lat.raw, gate: lat.gate });
    const report = {
      rawStartsPerSecond: round(rawRate),
      gateStartsPerSecond: round(gateRate),
      ratio: round(gateRate / rawRate, 3),
      /** The paired block bootstrap's percentile interval of the ratio: how well the figure is resolved. */
      interval: {
        lo: round(interval.lo, 3),
        hi: round(interval.hi, 3),
        level: interval.level,
        halfWidth: round((interval.hi - interval.lo) / 2, 3),
        blocks: spans,
        blockSeconds: BLOCK_S,
      },
      /** Each span's own ratio (min, quartiles, max): how much a run of one span would swing. */
      spread: spreadOf(spanRatios),
      perSpan: { raw: rawCounts.map((n) => round(n / BLOCK_S)), gate: gateCounts.map((n) => round(n / BLOCK_S)) },
      startLatencyMs: {
        raw: { p50: round(percentile(lat.raw, 50)), p99: round(percentile(lat.raw, 99)), histogram: startHist.raw },
        gate: { p50: round(percentile(lat.gate, 50)), p99: round(percentile(lat.gate, 99)), histogram: startHist.gate },
      },
      storm: {
        deliveries: STORM,
        executions: storm.executions,
        decisions: storm.decisions,
        answerMs: {
          p50: round(percentile(storm.latencies, 50)),
          p99: round(percentile(storm.latencies, 99)),
          max: round(Math.max(...storm.latencies)),
          histogram: histograms({ storm: storm.latencies }).storm,
        },
      },
    };
    console.log(JSON.stringify(report, null, 2));
    const problems = storm.executions === 1 ? [] : [`the storm of one key started ${storm.executions} executions, expected 1`];
    await recorder.write(report, problems);
    if (problems.length > 0) {
      console.error(problems.join('\n'));
      process.exitCode = 1;
    }
  } finally {
    await client.connection.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
