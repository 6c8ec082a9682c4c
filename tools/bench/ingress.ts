import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { Pool } from 'undici';
import { loadConfig } from '../../src/config/config';
import { DevServer } from '../../src/testing/dev-server';
import { RedisServer } from '../devserver/redis-server';
import { Gate } from '../../src/gate/gate';
import { offerStats } from './offer-stats';
import { queueHandler } from '../../src/trigger/queue/handler';
import { QueueMetrics } from '../../src/trigger/queue/metrics';
import { CONSUMER_GROUP, publish, RedisStreamsConsumer, streamKey } from '../../src/trigger/queue/redis-streams';
import { startIngress } from '../../src/processes/ingress-listeners';
import { campaignsSource } from '../../examples/campaigns-webhook';
import { histograms, percentile, round, runPool } from './stats';
import { appOf, exampleAgents } from '../../test/helpers/app';
import { withPolicies } from '../../test/helpers/agents';
import { benchSupervisorPolicy, untilNoOpenRuns } from './quiet';
import type { CoalescePolicy } from '../../src/core/policy';
import { benchRecorder } from './results';
import { keyEvent } from '../../src/gate/key-event';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `npm run bench:ingress`: on one dev server in one run, with workers up as in production (the
 * deployment's own worker, `createWakegate(...).worker()`, one per task queue, in this process),
 * 1. signed webhook ingest (POST /webhooks/campaigns, Standard Webhooks, each answered 202 only
 *    after the gate answered) for two sources side by side, against raw `client.workflow.start` of
 *    the same run the gate starts (on the same task queue, its worker up: what a deployment without
 *    the ingress and the gate pays per event), same concurrency, alternating rounds (raw in the
 *    middle, the order reversed every other round), each series started on idle workers; a fourth
 *    series, the same start on a task queue no worker polls, is kept as a reference (the server's
 *    bare start rate on this machine):
 *    - one-call: the campaigns webhook waking an agent on the one-call path (a start per delivery);
 *    - coalescing: the same webhook waking the agent with the campaign reporter's coalescing policy
 *      (debounce 10 s, maxWait 2 min, skip), BENCH_PER_KEY deliveries per campaign: each delivery
 *      is answered with the coalescer's decision, which the worker makes;
 * 2. queue ingest: messages pre-published to a Redis stream, consumed until every one is acked;
 * 3. RSS of this process (ingress, workers and load generator) during a sustained webhook burst.
 * The woken agent is the canary (its run: two short steps) on both webhook sources, so the runs the
 * workers execute meanwhile cost little and alike; what differs is the path. The supervisor is on
 * with storm thresholds and caps out of the way (this load is a storm by the default policy).
 * Signatures are computed before the clock starts.
 * Env: BENCH_N (per round, 500), BENCH_ROUNDS (4), BENCH_CONCURRENCY (32), BENCH_PER_KEY (10),
 * BENCH_QUEUE_N (1000), BENCH_BURST_S (30).
 */
const N = Number(process.env.BENCH_N ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PER_KEY = Number(process.env.BENCH_PER_KEY ?? 10);
const QUEUE_N = Number(process.env.BENCH_QUEUE_N ?? 1000);
const BURST_S = Number(process.env.BENCH_BURST_S ?? 30);
/** RSS is sampled this often during the burst; the samples are kept for the chart. */
const RSS_SAMPLE_MS = 250;

const BENCH_POLICY = benchSupervisorPolicy('bench:ingress', 'sends hundreds of webhooks a second');
/** The campaign reporter's own coalescing policy, the one a campaigns webhook meets in the examples. */
const REPORTER_COALESCE = exampleAgents['campaign-reporter']!.policy.coalesce as CoalescePolicy;

/** A deployment whose campaigns webhook wakes the canary alone, on the one-call path or coalescing. */
function benchApp(coalesce: CoalescePolicy | undefined) {
  const canaryOnly = Object.freeze({ canary: exampleAgents.canary! });
  const agents = withPolicies(canaryOnly, (d) => ({ triggers: [...d.policy.triggers, 'campaigns'], coalesce }));
  return appOf(agents, { schedules: [], supervisor: BENCH_POLICY });
}

type Kind = 'raw' | 'webhook' | 'coalescing' | 'bare';
/** One round's order: raw in the middle, next to both webhook series, the reference at an end; reversed every other round. */
const roundOrder = (r: number): Kind[] => (r % 2 === 0 ? ['bare', 'webhook', 'raw', 'coalescing'] : ['coalescing', 'raw', 'webhook', 'bare']);

async function main(): Promise<void> {
  const recorder = benchRecorder('ingress', {
    startsPerRound: N,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    deliveriesPerCampaign: PER_KEY,
    queueMessages: QUEUE_N,
    burstSeconds: BURST_S,
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; workers up (the deployment worker, one per task queue, in this process)',
    webhook: 'POST /webhooks/campaigns, Standard Webhooks signature, answered 202 after the gate answered; rate limits out of the way',
    agents: "the canary woken by the campaigns webhook: on the one-call path (ratio), and with the campaign reporter's coalescing policy (coalescingRatio)",
    supervisor: 'on, storm thresholds and caps out of the way; every run takes a permit at its first step',
    queue: 'a Redis stream of its own, one consumer (batch = concurrency) through the one-call gate',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const broker = await RedisServer.start();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const native = await NativeConnection.connect({ address: server.address });
  const redis = new Redis(broker.url);
  const tag = randomUUID().slice(0, 8);
  const limits = { ...loadConfig({}).ingress, port: 0, operatorPort: 0, ratePerSecond: 1e6, burst: 1e6, maxInFlight: 4 * CONCURRENCY };
  const side = async (name: string, coalesce: CoalescePolicy | undefined) => {
    const app = benchApp(coalesce);
    const taskQueue = `bench-ingress-${name}-${tag}`;
    // The supervisor started with the benchmark's policy before the ingress's gate (default policy) could start it.
    await app.supervisorLink(client, taskQueue).ensure(false);
    const worker = await app.worker({ connection: native, namespace: server.namespace, taskQueue, shutdownGraceTime: '1 second' });
    // Limits out of the way: this measures the accept path, not the shed policy.
    const ingress = await startIngress({ client, taskQueue, registry: app.registry, sources: [campaignsSource], config: limits, allowDevSecrets: true });
    // The load generator keeps its connections open and pays little per request (undici's pool, not
    // `fetch`): it shares the two cores with what it measures, and the raw series has no HTTP client.
    const pool = new Pool(ingress.url, { connections: CONCURRENCY, pipelining: 1 });
    return { app, taskQueue, worker, ingress, pool, path: '/webhooks/campaigns' };
  };
  const one = await side('one', undefined);
  const co = await side('co', REPORTER_COALESCE);
  const webhook = new Webhook(campaignsSource.devSecret);
  const decisions: Record<'webhook' | 'coalescing', Record<string, number>> = { webhook: {}, coalescing: {} };
  try {
    await one.worker.runUntil(() => co.worker.runUntil(() => measure()));
  } finally {
    await one.pool.close();
    await co.pool.close();
    await one.ingress.close();
    await co.ingress.close();
    redis.disconnect();
    await broker.stop();
    await client.connection.close();
    await native.close();
    await server.stop();
  }

  async function measure(): Promise<void> {
    /** `n` signed deliveries; `perKey` of them about each campaign (distinct events: a second apart in the campaign's time). */
    const signed = (prefix: string, n: number, perKey = 1) =>
      Array.from({ length: n }, (_, i) => {
        const body = JSON.stringify({
          type: 'config.changed',
          campaignId: `${prefix}-${Math.floor(i / perKey)}`,
          occurredAt: new Date(Date.parse('2026-12-02T14:05:00Z') + (i % perKey) * 1000).toISOString(),
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
    type Side = typeof one;
    const webhookTask = (side: Side, requests: ReturnType<typeof signed>, counts?: Record<string, number>) => async (i: number) => {
      const res = await side.pool.request({ path: side.path, method: 'POST', body: requests[i]!.body, headers: requests[i]!.headers });
      const text = await res.body.text();
      if (res.statusCode !== 202) throw new Error(`expected 202, got ${res.statusCode}: ${text}`);
      if (counts) {
        const decision = String((JSON.parse(text) as { decision?: string }).decision);
        counts[decision] = (counts[decision] ?? 0) + 1;
      }
    };
    /**
     * The raw series: the start the one-call gate makes for each delivery (the canary's run, its
     * workflow ID, input and memo), made directly with `client.workflow.start` on the same task queue,
     * whose worker runs it: what a deployment without the ingress and the gate pays per event. Keyed
     * before the clock starts, as the webhooks are signed before it.
     */
    const raw = (r: number, taskQueue = one.taskQueue, n = N) => {
      const inputs = Array.from(
        { length: n },
        (_, i) =>
          keyEvent(one.app.registry, {
            source: 'campaigns',
            entity: `raw-${taskQueue}-${r}-${i}`,
            type: 'config.changed',
            occurredAt: '2026-12-02T14:05:00Z',
            version: 1,
            payload: { dashboards: ['reach'] },
          }).input,
      );
      return (i: number) =>
        client.workflow.start('runWorkflow', {
          workflowId: inputs[i]!.runKey,
          taskQueue,
          args: [inputs[i]!],
          workflowIdConflictPolicy: 'FAIL',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
          memo: { fingerprint: inputs[i]!.fingerprint },
        });
    };

    await runPool(100, CONCURRENCY, raw(-1, one.taskQueue, 100));
    await runPool(100, CONCURRENCY, webhookTask(one, signed(`warm-${tag}`, 100)));
    await runPool(100, CONCURRENCY, webhookTask(co, signed(`warm-co-${tag}`, 100, PER_KEY)));

    const rates: Record<Kind, number[]> = { raw: [], webhook: [], coalescing: [], bare: [] };
    // Only the coalescing rounds offer to coalescers: the offer queue's counts over the rounds are theirs.
    const offers0 = { ...offerStats };
    const lat: Record<Kind, number[]> = { raw: [], webhook: [], coalescing: [], bare: [] };
    let quiesceSeconds = 0;
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of roundOrder(r)) {
        const task =
          kind === 'raw'
            ? raw(r)
            : kind === 'bare'
              ? raw(r, `bench-bare-${tag}`)
              : kind === 'webhook'
                ? webhookTask(one, signed(`wh-${tag}-${r}`, N), decisions.webhook)
                : webhookTask(co, signed(`co-${tag}-${r}`, N, PER_KEY), decisions.coalescing);
        const q0 = performance.now();
        // Each series starts on idle workers (after a coalescing series, once its debounce has run out
        // and its runs have ended too); its own runs run while it is measured, as in production.
        await untilNoOpenRuns(client, [one.taskQueue, co.taskQueue]);
        quiesceSeconds += (performance.now() - q0) / 1000;
        const t0 = performance.now();
        const l = await runPool(N, CONCURRENCY, task);
        rates[kind].push(N / ((performance.now() - t0) / 1000));
        lat[kind].push(...l);
        // A coalescing series' runs start once their debounce has run out: wait it out, then quiesce.
        if (kind === 'coalescing') await sleep(REPORTER_COALESCE.debouncePeriodMs + 1000);
      }
    }
    const offerBatching = {
      updates: offerStats.updates - offers0.updates,
      offers: offerStats.offers - offers0.offers,
      offersPerUpdate: round((offerStats.offers - offers0.offers) / Math.max(1, offerStats.updates - offers0.updates), 2),
      fallbackSignals: offerStats.fallbackSignals - offers0.fallbackSignals,
    };
    const total = (xs: number[]) => (xs.length * N) / xs.reduce((s, rate) => s + N / rate, 0);
    const medianRatio = (kind: Kind) =>
      round(
        percentile(
          rates[kind].map((w, i) => w / rates.raw[i]!),
          50,
        ),
        3,
      );

    // Queue ingest: a backlog of QUEUE_N messages, drained by one consumer through the one-call gate (its worker up).
    const source = 'ping';
    for (let i = 0; i < QUEUE_N; i++) await publish(redis, { source, entity: `q-${tag}-${i}`, type: 'bench', occurredAt: '2026-12-02T14:05:00Z' });
    const queueMetrics = new QueueMetrics(new Registry());
    const consumer = new RedisStreamsConsumer({ redis, sources: [source], claimIdleMs: 60_000, batch: CONCURRENCY, blockMs: 100, metrics: queueMetrics });
    const gate = new Gate({ client, taskQueue: one.taskQueue, registry: one.app.registry });
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
          await webhookTask(one, [req!])(0);
          burstSent++;
        }
      }),
    );
    clearInterval(sampler);
    const mb = (x: number) => round(x / 2 ** 20);
    const third = Math.max(1, Math.floor(rss.length / 3));
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

    await gate.close();

    // One bin width for the three series, so their distributions can be drawn side by side.
    const latHist = histograms(lat);
    const latency = (kind: Kind) => ({ p50: round(percentile(lat[kind], 50)), p99: round(percentile(lat[kind], 99)), histogram: latHist[kind] });
    const report = {
      rawStartsPerSecond: round(total(rates.raw)),
      webhookAcceptsPerSecond: round(total(rates.webhook)),
      ratio: round(total(rates.webhook) / total(rates.raw), 3),
      medianRoundRatio: medianRatio('webhook'),
      coalescingAcceptsPerSecond: round(total(rates.coalescing)),
      coalescingRatio: round(total(rates.coalescing) / total(rates.raw), 3),
      coalescingMedianRoundRatio: medianRatio('coalescing'),
      bareStartsPerSecond: round(total(rates.bare)),
      quiesceSeconds: round(quiesceSeconds),
      offerBatching,
      decisions,
      perRound: {
        raw: rates.raw.map((x) => round(x)),
        webhook: rates.webhook.map((x) => round(x)),
        coalescing: rates.coalescing.map((x) => round(x)),
        bare: rates.bare.map((x) => round(x)),
      },
      latencyMs: { raw: latency('raw'), webhook: latency('webhook'), coalescing: latency('coalescing'), bare: latency('bare') },
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
    // A coalescing delivery answered `accepted` waited out the ingress's decision deadline: the decision was not measured.
    const undecided = decisions.coalescing.accepted ?? 0;
    const problems = [
      ...(stillPending === 0 ? [] : [`${stillPending} queue messages still pending after the drain`]),
      ...(undecided === 0 ? [] : [`${undecided} coalescing deliveries were answered accepted: their decision outlasted the ingress's deadline`]),
    ];
    await recorder.write(report, problems);
    // The last line: the figures in one JSON line.
    console.log(
      JSON.stringify({
        bench: 'ingress',
        rawStartsPerS: report.rawStartsPerSecond,
        ratio: report.ratio,
        coalescingRatio: report.coalescingRatio,
        medianRoundRatio: report.medianRoundRatio,
        coalescingMedianRoundRatio: report.coalescingMedianRoundRatio,
        bareStartsPerS: report.bareStartsPerSecond,
        decisions,
      }),
    );
    if (problems.length > 0) {
      console.error(problems.join('\n'));
      process.exitCode = 1;
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
