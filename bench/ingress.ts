import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../config/config';
import { DevServer } from '../devserver/dev-server';
import { RedisServer } from '../devserver/redis-server';
import { Gate } from '../gate/gate';
import { queueHandler } from '../ingress/queue/handler';
import { QueueMetrics } from '../ingress/queue/metrics';
import { CONSUMER_GROUP, publish, RedisStreamsConsumer, streamKey } from '../ingress/queue/redis-streams';
import { startIngress } from '../ingress/serve';
import { campaignsSource } from '../examples/campaigns-webhook';
import type { RunInput } from '../core/types';
import { histograms, percentile, round, runPool } from './stats';
import { exampleApp, registryOf } from '../test/helpers/app';
import { oneCallAgents } from '../test/helpers/agents';
import { benchRecorder } from './results';

/**
 * `npm run bench:ingress`: on one dev server in one run,
 * 1. signed webhook ingest (POST /webhooks/campaigns, Standard Webhooks, each answered 202 only
 *    after Temporal accepted) vs raw `client.workflow.start`, same concurrency, alternating rounds;
 * 2. queue ingest: messages pre-published to a Redis stream, consumed until every one is acked;
 * 3. RSS of this process (ingress + its load generator) sampled during a sustained webhook burst.
 * No worker runs: both sides measure the accept path, so the agents run on the one-call path (a
 * coalescing agent's delivery would wait for a decision no worker makes). Signatures are computed
 * before the clock starts.
 * Env: BENCH_N (per round, 500), BENCH_ROUNDS (4), BENCH_CONCURRENCY (32), BENCH_QUEUE_N (1000), BENCH_BURST_S (30).
 */
const N = Number(process.env.BENCH_N ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const QUEUE_N = Number(process.env.BENCH_QUEUE_N ?? 1000);
const BURST_S = Number(process.env.BENCH_BURST_S ?? 30);
/** RSS is sampled this often during the burst; the samples are kept for the chart. */
const RSS_SAMPLE_MS = 250;

async function main(): Promise<void> {
  const recorder = benchRecorder('ingress', {
    startsPerRound: N,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    queueMessages: QUEUE_N,
    burstSeconds: BURST_S,
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; no worker: both sides measure the accept path',
    webhook: 'POST /webhooks/campaigns, Standard Webhooks signature, answered 202 after the gate returned; rate limits out of the way',
    agents: "the examples' agents on the one-call path (the campaign reporter without its coalescing policy): the accept path is one start",
    queue: 'a Redis stream of its own, one consumer (batch = concurrency) through the gate',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const broker = await RedisServer.start();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const redis = new Redis(broker.url);
  const tag = randomUUID().slice(0, 8);
  // The examples' agents on the one-call path: with no worker, a coalescing agent's delivery would
  // wait out the ingress's decision wait before its 202, and that wait, not the accept path, would be measured.
  const registry = registryOf(oneCallAgents());
  const ingress = await startIngress({
    client,
    taskQueue: `bench-ingress-${tag}`,
    registry,
    sources: exampleApp.webhookSources,
    // Limits out of the way: this measures the accept path, not the shed policy.
    config: { ...loadConfig({}).ingress, port: 0, operatorPort: 0, ratePerSecond: 1e6, burst: 1e6, maxInFlight: 4 * CONCURRENCY },
    allowDevSecrets: true,
  });
  const webhook = new Webhook(campaignsSource.devSecret);
  const url = `${ingress.url}/webhooks/campaigns`;
  try {
    const signed = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => {
        const body = JSON.stringify({
          type: 'config.changed',
          campaignId: `${prefix}-${i}`,
          occurredAt: '2026-12-02T14:05:00Z',
          version: 1,
          dashboards: ['reach'],
        });
        const at = new Date();
        const id = `${prefix}-${i}`;
        return {
          body,
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': webhook.sign(id, at, body),
          },
        };
      });
    const webhookTask = (requests: ReturnType<typeof signed>) => async (i: number) => {
      const res = await fetch(url, { method: 'POST', body: requests[i]!.body, headers: requests[i]!.headers });
      const text = await res.text();
      if (res.status !== 202) throw new Error(`expected 202, got ${res.status}: ${text}`);
    };
    const raw = (r: number) => (i: number) =>
      client.workflow.start('runWorkflow', { workflowId: `raw-${tag}-${r}-${i}`, taskQueue: `bench-raw-${tag}`, args: [{ eventKey: `raw-${i}` } as RunInput] });

    await runPool(100, CONCURRENCY, raw(-1));
    await runPool(100, CONCURRENCY, webhookTask(signed(`warm-${tag}`, 100)));

    const rates = { raw: [] as number[], webhook: [] as number[] };
    const lat = { raw: [] as number[], webhook: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of r % 2 === 0 ? (['raw', 'webhook'] as const) : (['webhook', 'raw'] as const)) {
        const task = kind === 'raw' ? raw(r) : webhookTask(signed(`wh-${tag}-${r}`, N));
        const t0 = performance.now();
        const l = await runPool(N, CONCURRENCY, task);
        rates[kind].push(N / ((performance.now() - t0) / 1000));
        lat[kind].push(...l);
      }
    }
    const total = (xs: number[]) => (xs.length * N) / xs.reduce((s, rate) => s + N / rate, 0);

    // Queue ingest: a backlog of QUEUE_N messages, drained by one consumer through the gate.
    const source = 'ping';
    for (let i = 0; i < QUEUE_N; i++) await publish(redis, { source, entity: `q-${tag}-${i}`, type: 'bench', occurredAt: '2026-12-02T14:05:00Z' });
    const queueMetrics = new QueueMetrics(new Registry());
    const consumer = new RedisStreamsConsumer({ redis, sources: [source], claimIdleMs: 60_000, batch: CONCURRENCY, blockMs: 100, metrics: queueMetrics });
    const gate = new Gate({ client, taskQueue: `bench-queue-${tag}`, registry });
    const q0 = performance.now();
    const consuming = consumer.run(queueHandler({ gate, client, temporalTimeoutMs: 10_000, maxAttempts: 5 }));
    for (;;) {
      const acked = (await queueMetrics.accepted.get()).values.reduce((s, v) => s + v.value, 0);
      if (acked >= QUEUE_N) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const queueSeconds = (performance.now() - q0) / 1000;
    await consumer.stop();
    await consuming;
    const stillPending = Number(((await redis.xpending(streamKey(source), CONSUMER_GROUP)) as [number])[0]);

    // RSS during a sustained burst through the ingress.
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(process.memoryUsage().rss), RSS_SAMPLE_MS);
    const burstEnd = Date.now() + BURST_S * 1000;
    let burstSent = 0;
    const rssStart = process.memoryUsage().rss;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, lane) => {
        for (let i = 0; Date.now() < burstEnd; i++) {
          const [req] = signed(`burst-${tag}-${lane}-${i}`, 1);
          await webhookTask([req!])(0);
          burstSent++;
        }
      }),
    );
    clearInterval(sampler);
    const mb = (x: number) => round(x / 2 ** 20);
    const third = Math.max(1, Math.floor(rss.length / 3));
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

    // One bin width for both series, so their distributions can be drawn side by side.
    const latHist = histograms({ raw: lat.raw, webhook: lat.webhook });
    const report = {
      rawStartsPerSecond: round(total(rates.raw)),
      webhookAcceptsPerSecond: round(total(rates.webhook)),
      ratio: round(total(rates.webhook) / total(rates.raw), 3),
      medianRoundRatio: round(
        percentile(
          rates.webhook.map((w, i) => w / rates.raw[i]!),
          50,
        ),
        3,
      ),
      perRound: { raw: rates.raw.map((x) => round(x)), webhook: rates.webhook.map((x) => round(x)) },
      latencyMs: {
        raw: { p50: round(percentile(lat.raw, 50)), p99: round(percentile(lat.raw, 99)), histogram: latHist.raw },
        webhook: { p50: round(percentile(lat.webhook, 50)), p99: round(percentile(lat.webhook, 99)), histogram: latHist.webhook },
      },
      queue: { messages: QUEUE_N, seconds: round(queueSeconds, 2), acceptedPerSecond: round(QUEUE_N / queueSeconds), pendingAfter: stillPending },
      burst: {
        seconds: BURST_S,
        accepted: burstSent,
        acceptedPerSecond: round(burstSent / BURST_S),
        rssMb: {
          start: mb(rssStart),
          max: mb(Math.max(...rss)),
          firstThirdMean: mb(mean(rss.slice(0, third))),
          lastThirdMean: mb(mean(rss.slice(-third))),
          sampleEveryMs: RSS_SAMPLE_MS,
          samples: rss.map(mb),
        },
      },
    };
    console.log(JSON.stringify(report, null, 2));
    const problems = stillPending === 0 ? [] : [`${stillPending} queue messages still pending after the drain`];
    await recorder.write(report, problems);
    if (problems.length > 0) {
      console.error(problems.join('\n'));
      process.exitCode = 1;
    }
  } finally {
    await ingress.close();
    redis.disconnect();
    await broker.stop();
    await client.connection.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
