import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DevServer } from '../devserver/dev-server';
import { Gate } from '../gate/gate';
import { createWakeWorker } from '../runtime/worker';
import type { RunInput } from '../core/types';
import { histograms, percentile, round, runPool } from './stats';
import { registryOf } from '../test/helpers/app';
import { exampleApp } from '../test/helpers/app';
import { benchRecorder } from './results';

/**
 * `npm run bench:gate`: on one dev server in one run,
 * 1. start throughput: raw `client.workflow.start` with unique IDs vs the gate with unique keys, at
 *    the same concurrency, in alternating rounds (neither has a worker: both measure the start path);
 * 2. a storm: 1,000 concurrent deliveries of one logical event while its run is open: how many
 *    executions (visibility count; must be 1), and p50/p99 of the answers.
 * Rounds alternate the order (raw then gate, gate then raw) so drift in the machine's load falls on
 * both alike; the report gives the ratio of the totals and the median of the per-round ratios.
 * Env: BENCH_N (starts per round, default 500), BENCH_ROUNDS (6), BENCH_CONCURRENCY (32), BENCH_STORM (1000).
 */
const N = Number(process.env.BENCH_N ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const STORM = Number(process.env.BENCH_STORM ?? 1000);

async function main(): Promise<void> {
  const recorder = benchRecorder('gate', {
    startsPerRound: N,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
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
    const rawQueue = `bench-raw-${runTag}`;
    const gate = new Gate({ client, taskQueue: `bench-gate-${runTag}`, registry });
    const occurredAt = '2026-12-02T14:05:00Z';

    const raw = (round: number) => (i: number) =>
      client.workflow.start('runWorkflow', {
        workflowId: `raw-${runTag}-${round}-${i}`,
        taskQueue: rawQueue,
        args: [{ eventKey: `raw-${i}` } as RunInput],
      });
    const gated = (round: number) => (i: number) =>
      gate.admit({ source: 'ping', entity: `e-${runTag}-${round}-${i}`, type: 'bench', occurredAt, deliveryId: `d-${i}` }).then((a) => {
        if (a.decision !== 'started') throw new Error(`expected started, got ${a.decision}`);
      });

    // Warm up both paths (connections, server caches) before measuring.
    await runPool(100, CONCURRENCY, raw(-1));
    await runPool(100, CONCURRENCY, gated(-1));

    const rates = { raw: [] as number[], gate: [] as number[] };
    const lat = { raw: [] as number[], gate: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of r % 2 === 0 ? (['raw', 'gate'] as const) : (['gate', 'raw'] as const)) {
        const t0 = performance.now();
        const l = await runPool(N, CONCURRENCY, kind === 'raw' ? raw(r) : gated(r));
        const seconds = (performance.now() - t0) / 1000;
        rates[kind].push(N / seconds);
        lat[kind].push(...l);
      }
    }
    const total = (xs: number[]) => (xs.length * N) / xs.reduce((s, rate) => s + N / rate, 0);
    const rawRate = total(rates.raw);
    const gateRate = total(rates.gate);

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
      medianRoundRatio: round(
        percentile(
          rates.gate.map((g, i) => g / rates.raw[i]!),
          50,
        ),
        3,
      ),
      perRound: { raw: rates.raw.map((x) => round(x)), gate: rates.gate.map((x) => round(x)) },
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
