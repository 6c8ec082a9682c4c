import { randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DevServer } from '../../src/testing/dev-server';
import { withPolicies } from '../../test/helpers/agents';
import type { GateAnswer } from '../../src/core/decision';
import type { RunInput } from '../../src/core/run-types';
import { benchSupervisorPolicy, untilNoOpenRuns } from './quiet';
import { histograms, percentile, round, runPool } from './stats';
import { appOf, exampleAgents } from '../../test/helpers/app';
import { benchRecorder } from './results';
import { InFlightRefusals } from './in-flight-refusals';
import { offerStats } from './offer-stats';
import { coalescerQuery } from '../../src/core/messages';
import { DEFAULT_WORKFLOW_CACHE } from '../../src/runtime/worker';
import { START_BACKLOG } from '../../src/coalescer/backlog';
import { loadConfig } from '../../src/config/config';
import { coalescerPayloads } from './coalescer-payloads';

/**
 * `npm run bench:coalesce`: the coalescing path on one dev server, with the deployment's worker in
 * this process, through the gate's public API (`createWakegate(...).gate(...).admit`).
 * 1. Warm-up: raw starts and coalescing offers over many keys, then a hot key's stream as in 3 (on
 *    a key of its own), then one event each over more keys than the worker's workflow cache holds
 *    (their coalescers stay open, idle, so the cache reaches its bound: RSS `cacheFull`), and as
 *    many again (each new coalescer evicts one: the cache turned over once), then RSS (`warm`).
 * 2. Many wake keys: BENCH_KEYS (200) keys × 10 events, key after key, offered as fast as the gate
 *    takes them with BENCH_CONCURRENCY (64) outstanding, against raw `client.workflow.start` (unique
 *    IDs, no worker on their queue) at the same concurrency, in BENCH_ROUNDS (4) alternating rounds
 *    (the keys split between them), each series started on an idle worker (the runs of the one
 *    before it ended): `ratio` = coalescing events per second / raw starts per second.
 * 3. One hot wake key: BENCH_EVENTS (10,000) distinct events offered at BENCH_EVENTS / BENCH_SECONDS
 *    (60) per second, open loop (each offer sent at its time, however many answers are outstanding):
 *    each answer's latency, the seconds until all are answered, the runs started and their bound,
 *    ceil(seconds / maxWait) + 1.
 *    Then its dedup table: events held, its stated capacity, events it let go early (0: the whole
 *    stream deduplicated), and redeliveries of its first, middle and last events, each answered
 *    from its first decision. And the payloads its coalescer sent, read from the histories of all its
 *    executions (tools/bench/coalescer-payloads.ts): the largest, by kind, how many were over the SDK's
 *    512 KiB warning (TMPRL1103), and the parts of its largest continue-as-new input.
 * 4. RSS at the end (`end`), against `warm`; updates the server refused with its in-flight limit
 *    (tools/bench/in-flight-refusals.ts says where they are counted).
 * 5. Many keys, one event each (a nightly import touching every campaign once): BENCH_ONE_EACH_KEYS
 *    (2,000) keys against raw starts in rounds as in 2, after the end's RSS reading (each key leaves
 *    an idle coalescer in the worker's cache, which is what 4 would measure otherwise). Admission
 *    (events answered per second) against raw starts; and end to end, wakes per second from a
 *    round's first offer until every run it made had closed, against as many keys of the canary's
 *    one-call path (the same agent without its coalescing policy, ONE_CALL_AGENT) in the same rounds
 *    on the same worker: their ratio, failed answers and RSS, each beside its target with `met`.
 * The agent is the canary with a coalescing policy (debounce 1 s, maxWait 5 s, skip while running):
 * its run costs two short activities, so what is measured is the gate and the coalescer. The
 * supervisor is on with a benchmark policy (storm thresholds and the fleet cap out of the way, so
 * every run still takes its permit at its first step). Ends with one JSON line of the figures.
 */
const BENCH_POLICY = benchSupervisorPolicy('bench:coalesce', 'offers ~170 events/s');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const KEYS = Number(process.env.BENCH_KEYS ?? 200);
/** Events per key in the many keys' phase (2); with 1 it measures what phase 5 does, under the file's usual fields. */
const PER_KEY = Number(process.env.BENCH_PER_KEY ?? 10);
const DEFAULT_ONE_EACH_KEYS = 2000;
const ONE_EACH_KEYS = Number(process.env.BENCH_ONE_EACH_KEYS ?? DEFAULT_ONE_EACH_KEYS);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
/**
 * Events (and raw starts) of the warm-up: as many as a phase of many keys, so that RSS is read once
 * the process has reached its working set (the workflow threads' V8 heaps, connection buffers). A
 * smaller warm-up reads RSS before that, and the growth it then reports is the working set being
 * reached, not a leak: the JS heap (`heapUsedMb`, after a full collection) stays flat either way.
 */
const WARM = Number(process.env.BENCH_WARM ?? 2000);
/**
 * Events of the warm-up's hot stream (as many as the measured one, at its rate): a hot coalescer's
 * state (every event key it answered within its dedup horizon, carried across continue-as-new) and
 * the workflow thread's heap that holds it reach their size only in such a stream. Read before it,
 * `warm` left that out: the end was 1.01x warm in one run and 1.17x and 1.32x in others with the
 * same code, as the allocator happened to hand memory back or not.
 */
const WARM_HOT = Number(process.env.BENCH_WARM_HOT ?? EVENTS);
/**
 * Keys of each of the warm-up's last two parts, one event each: more than the workflow cache holds,
 * so that `warm` is read with the cache at its bound and turned over once. Read before the cache was
 * full, the growth to the end was the cache filling to its bound (202 cached at `warm`, 403 at the
 * end in one run); read once it was full but before any eviction, the first round of one event per
 * key (each new coalescer evicting an idle one) added 228 MB, and the next three rounds none (890,
 * 841, 823, 836 MB): the working set of a turning cache, not growth with the keys.
 */
const WARM_ONE_EACH = Number(process.env.BENCH_WARM_ONE_EACH ?? Math.ceil(DEFAULT_WORKFLOW_CACHE * 1.2));
const MAX_WAIT_MS = 5000;
/** The canary again without its coalescing policy: phase 5 measures its one-call path end to end beside the coalescing one. */
const ONE_CALL_AGENT = 'canary-one-call';
/** Phase 5's wakes end to end (offered until their runs closed), coalescing over one-call: at least this. */
const END_TO_END_RATIO_TARGET = 0.8;
/** RSS after phase 5, once its runs ended, over the warm figure: at most this (as at the end of 4). */
const RSS_OVER_WARM_TARGET = 1.15;
/**
 * One phase alone, to measure it without the whole run: `hot` (3, the hot key and its payloads) or
 * `one-each` (5). Without the warm-up its RSS figures mean little; it writes no results file, and
 * prints its report (and the problems its checks find) only.
 */
const ONLY = process.env.BENCH_ONLY as 'hot' | 'one-each' | undefined;
if (ONLY !== undefined && ONLY !== 'hot' && ONLY !== 'one-each') throw new Error(`BENCH_ONLY is hot or one-each, not ${String(ONLY)}`);
const runs = (phase: 'hot' | 'one-each') => ONLY === undefined || ONLY === phase;

// A full collection before each RSS reading, without asking for --expose-gc on the command line.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heap: Record<string, number> = {};
/** Workflows in the worker's cache at each RSS reading (Temporal's sticky cache: coalescers stay open, idle, until their dedup horizon). */
const cached: Record<string, number> = {};
const rssMb = (cachedNow: number, named?: string) => {
  gc();
  const m = process.memoryUsage();
  const inOrder = ['warm', 'afterManyKeys', 'end', 'afterOneEventPerKey'];
  const at = named ?? inOrder[Object.keys(heap).filter((k) => inOrder.includes(k)).length] ?? 'later';
  heap[at] = round(m.heapUsed / 2 ** 20, 0);
  cached[at] = cachedNow;
  return round(m.rss / 2 ** 20, 0);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Send `n` offers, offer i at `i × intervalMs` after the first, whatever is still unanswered (open loop). */
async function openLoop(n: number, intervalMs: number, send: (i: number) => Promise<GateAnswer>) {
  const latencies: number[] = [];
  const answers: GateAnswer[] = [];
  /** When each answer came, ms after the first offer, in the order of `answers`. */
  const answeredAtMs: number[] = [];
  const errors: string[] = [];
  const done: Promise<void>[] = [];
  const t0 = performance.now();
  const startedAt = Date.now();
  for (let i = 0; i < n; i++) {
    const wait = t0 + i * intervalMs - performance.now();
    if (wait > 1) await sleep(wait);
    const s = performance.now();
    done.push(
      send(i).then(
        (a) => {
          latencies.push(performance.now() - s);
          answers.push(a);
          answeredAtMs.push(performance.now() - t0);
        },
        (err: unknown) => void errors.push(messageOf(err)),
      ),
    );
  }
  await Promise.all(done);
  return { seconds: (performance.now() - t0) / 1000, latencies, answers, answeredAtMs, startedAt, errors };
}

/** The longest span between two answers (in the order they came), and where it began. */
function longestGap(answeredAtMs: number[]): { ms: number; atS: number } {
  const at = [...answeredAtMs].sort((a, b) => a - b);
  let best = { ms: 0, atS: 0 };
  for (let i = 1; i < at.length; i++) if (at[i]! - at[i - 1]! > best.ms) best = { ms: round(at[i]! - at[i - 1]!, 0), atS: round(at[i - 1]! / 1000) };
  return best;
}

const EventType = temporal.api.enums.v1.EventType;
/** Event types that every offer writes: left out of a gap's account, which is about what else happened. */
const EVERY_OFFER = new Set([
  EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
]);

/**
 * A gap longer than a second, with what the hot coalescer's history holds from its start to its
 * end besides the offers' own events (a signal to its run, a timer, a continue-as-new), each with
 * its time in seconds after the first offer: where to look for the cause.
 */
async function withCoalescerEvents(client: Client, coalescerId: string | undefined, startedAt: number, gap: { ms: number; atS: number }) {
  if (!coalescerId || gap.ms < 1000) return gap;
  const fromMs = startedAt + gap.atS * 1000 - 100;
  const toMs = fromMs + gap.ms + 200;
  const events: { atS: number; run: string; event: string }[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${coalescerId}"` })) {
    for (const e of (await client.workflow.getHandle(coalescerId, wf.runId).fetchHistory()).events ?? []) {
      const t = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
      if (t < fromMs || t > toMs || EVERY_OFFER.has(e.eventType!)) continue;
      events.push({ atS: round((t - startedAt) / 1000, 3), run: wf.runId.slice(0, 8), event: EventType[e.eventType!]!.replace('EVENT_TYPE_', '') });
    }
  }
  return { ...gap, coalescerEvents: events.sort((x, y) => x.atS - y.atS).slice(0, 40) };
}

/** The hot key over time, for the chart: answers per second since the first offer by decision, and each run from start to end. */
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

const countDecisions = (answers: GateAnswer[]) => {
  const out: Record<string, number> = {};
  for (const a of answers) out[a.decision] = (out[a.decision] ?? 0) + 1;
  return out;
};

async function main(): Promise<void> {
  // A run over many more keys than the default is a measure of its own (memory at that many keys): its own file.
  const file = ONE_EACH_KEYS === DEFAULT_ONE_EACH_KEYS ? 'coalesce' : `coalesce-${ONE_EACH_KEYS}-keys`;
  const recorder = benchRecorder(
    'coalesce',
    {
      hotKeyEvents: EVENTS,
      hotKeySeconds: SECONDS,
      keys: KEYS,
      eventsPerKey: PER_KEY,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      warmUp: WARM,
      warmUpHotKeyEvents: WARM_HOT,
      warmUpOneEventKeys: WARM_ONE_EACH,
      policy: { debounceMs: 1000, maxWaitMs: MAX_WAIT_MS, whileRunning: 'skip' },
      agent: 'canary with a coalescing policy (its run: two short activities)',
      temporal: "dev server of its own (temporal server start-dev, SQLite), localhost; the deployment's worker in the benchmark process",
      supervisor: 'on, with a benchmark policy: storm thresholds raised out of the way, every run takes a permit at its first step',
      oneEventPerKeyKeys: ONE_EACH_KEYS,
      oneCallAgent: `${ONE_CALL_AGENT}: the canary without its coalescing policy, phase 5's one-call path`,
      workflowCache: DEFAULT_WORKFLOW_CACHE,
      /** The gate's bound on the workflow backlog past which a new key goes by update (WAKEGATE_START_BACKLOG). */
      startBacklog: loadConfig().startBacklog ?? START_BACKLOG,
    },
    { file },
  );
  const refusals = new InFlightRefusals();
  Runtime.install({ logger: refusals.logger(new DefaultLogger('WARN')) });
  const server = await DevServer.start();
  // A hot coalescer's history can pass gRPC's default 4 MB message bound: its payloads are read from it.
  const channelArgs = { 'grpc.max_receive_message_length': 64 * 2 ** 20 };
  const client = new Client({ connection: await Connection.connect({ address: server.address, interceptors: refusals.interceptors(), channelArgs }) });
  const connection = await NativeConnection.connect({ address: server.address });
  const coalescingAgents = withPolicies(exampleAgents, (d) =>
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
  const { coalesce: _coalesce, ...oneCallPolicy } = coalescingAgents.canary!.policy;
  const agents = { ...coalescingAgents, [ONE_CALL_AGENT]: { ...coalescingAgents.canary!, policy: { ...oneCallPolicy, name: ONE_CALL_AGENT } } };
  const app = appOf(agents, { supervisor: BENCH_POLICY });
  const tag = randomUUID().slice(0, 8);
  const taskQueue = `bench-coalesce-${tag}`;
  const gate = app.gate(client, taskQueue, { decisionWaitMs: 60_000 });
  const worker = await app.worker({ connection, namespace: server.namespace, taskQueue });
  const occurredAt = '2026-12-02T10:00:00Z';
  const count = (query: string) => client.workflow.count(query).then((c) => c.count);
  /** Until `n` runs of wake keys starting with `prefix` have closed. */
  const untilRunsClosed = async (prefix: string, n: number) => {
    const query = `WorkflowType = 'runWorkflow' AND WakeKey STARTS_WITH '${prefix}' AND ExecutionStatus != 'Running'`;
    while ((await count(query)) < n) await sleep(250);
  };
  try {
    await worker.runUntil(async () => {
      // Each event to the coalescing canary only (the source `ping` wakes its one-call copy too).
      const admit = (e: { entity: string; type: string; deliveryId?: string }, agent = 'canary') => gate.admit({ source: 'ping', occurredAt, ...e }, { agent });
      const offer = (entity: string, type: string) => admit({ entity, type });
      const raw = (prefix: string) => (i: number) =>
        client.workflow.start('runWorkflow', { workflowId: `${prefix}-${i}`, taskQueue: `bench-raw-${tag}`, args: [{ eventKey: `raw-${i}` } as RunInput] });
      /** Offers in a pool of CONCURRENCY: their latencies, answers and errors (an error does not stop the others). */
      const pooled = async (n: number, send: (i: number) => Promise<GateAnswer>) => {
        const answers: GateAnswer[] = [];
        const errors: string[] = [];
        const latencies = await runPool(n, CONCURRENCY, (i) =>
          send(i).then(
            (a) => void answers.push(a),
            (err: unknown) => void errors.push(messageOf(err)),
          ),
        );
        return { latencies, answers, errors };
      };

      // 1. Warm-up: connections, the bundle's first tasks, server caches; then its runs end.
      const [warmN, warmHotN, warmOneEachN] = ONLY ? [0, 0, 0] : [WARM, WARM_HOT, WARM_ONE_EACH];
      await runPool(warmN, CONCURRENCY, raw(`warm-${tag}`));
      const warm = await pooled(warmN, (i) => offer(`warm-${tag}-${Math.floor(i / PER_KEY)}`, `w-${i % PER_KEY}`));
      const warmHot = await openLoop(warmHotN, (SECONDS * 1000) / EVENTS, (i) => admit({ entity: `warm-hot-${tag}`, type: `e-${i}`, deliveryId: `wd-${i}` }));
      warm.errors.push(...warmHot.errors);
      if (!ONLY) await sleep(MAX_WAIT_MS + 3000);
      const rssBeforeFill = rssMb(worker.getStatus().numCachedWorkflows, 'beforeCacheFull');
      const oneEachWarmUp = async (part: string) => {
        const ones = await pooled(warmOneEachN, (i) => offer(`warm1-${tag}-${part}-${i}`, 'import'));
        warm.errors.push(...ones.errors);
        if (!ONLY) await sleep(1500);
        await untilNoOpenRuns(client, [taskQueue]);
      };
      await oneEachWarmUp('fill');
      const rssCacheFull = rssMb(worker.getStatus().numCachedWorkflows, 'cacheFull');
      await oneEachWarmUp('turn');
      const rssWarm = rssMb(worker.getStatus().numCachedWorkflows);

      // 2. Many keys against raw starts, alternating rounds.
      const rates = { raw: [] as number[], coalesce: [] as number[] };
      const many = { latencies: [] as number[], answers: [] as GateAnswer[], errors: [] as string[] };
      const perRoundKeys = Math.max(1, Math.floor(KEYS / ROUNDS));
      for (let r = 0; r < (ONLY ? 0 : ROUNDS); r++) {
        const n = perRoundKeys * PER_KEY;
        for (const kind of r % 2 === 0 ? (['raw', 'coalesce'] as const) : (['coalesce', 'raw'] as const)) {
          await untilNoOpenRuns(client, [taskQueue]); // each series starts on an idle worker
          const t0 = performance.now();
          if (kind === 'raw') await runPool(n, CONCURRENCY, raw(`raw-${tag}-${r}`));
          else {
            const round = await pooled(n, (i) => offer(`k-${tag}-${r * perRoundKeys + Math.floor(i / PER_KEY)}`, `e-${i % PER_KEY}`));
            many.latencies.push(...round.latencies);
            many.answers.push(...round.answers);
            many.errors.push(...round.errors);
          }
          rates[kind].push(n / ((performance.now() - t0) / 1000));
          if (kind === 'coalesce') await sleep(1500); // its last keys' debounce (1 s): their runs start, then the next series waits them out
        }
      }
      const total = (xs: number[]) => (xs.length * perRoundKeys * PER_KEY) / xs.reduce((s, rate) => s + (perRoundKeys * PER_KEY) / rate, 0);
      const rawRate = total(rates.raw);
      const coalesceRate = total(rates.coalesce);
      if (!ONLY) await sleep(MAX_WAIT_MS + 5000);
      const manyRuns = await count(`WorkflowType = "runWorkflow" AND WakeKey STARTS_WITH "k-${tag}-"`);
      const rssAfterMany = rssMb(worker.getStatus().numCachedWorkflows);

      // 3. One hot key, open loop.
      const hot = `hot-${tag}`;
      const resent0 = offerStats.stuckResends;
      const one = await openLoop(runs('hot') ? EVENTS : 0, (SECONDS * 1000) / EVENTS, (i) => admit({ entity: hot, type: `e-${i}`, deliveryId: `d-${i}` }));
      const coalescerId = one.answers.find((a) => a.coalescerId)?.coalescerId;
      if (runs('hot')) await sleep(MAX_WAIT_MS + 3000); // the last batch's run starts before runs are counted
      const hotRuns = await count(`WorkflowType = "runWorkflow" AND WakeKey = "${hot}"`);
      const bound = Math.ceil(one.seconds / (MAX_WAIT_MS / 1000)) + 1;
      const timeline = await hotKeyTimeline(client, hot, one);
      const coalescerExecutions = coalescerId ? await count(`WorkflowId = "${coalescerId}"`) : undefined;
      // Its dedup table held the whole stream: nothing let go early, and old events are still answered from their first decision.
      const table = coalescerId ? await client.workflow.getHandle(coalescerId).query(coalescerQuery, { seenLast: 0 }) : undefined;
      const resentOf = runs('hot') ? [0, 1, Math.floor(EVENTS / 2), EVENTS - 1] : [];
      const resent = await Promise.all(resentOf.map((i) => admit({ entity: hot, type: `e-${i}`, deliveryId: `again-${i}` })));
      const dedup = {
        held: table?.seenCount,
        capacity: table?.seenCapacity,
        forgottenEarly: table?.state.counts.forgottenEarly ?? 0,
        redelivered: resentOf.length,
        answeredFromFirstDecision: resent.filter((a) => a.original !== undefined && a.original !== 'mismatch').length,
      };
      const payloads = coalescerId ? await coalescerPayloads(client, coalescerId) : undefined;

      // 4. The end.
      const rssEnd = rssMb(worker.getStatus().numCachedWorkflows);

      // 5. Many keys, one event each, against raw starts, alternating rounds.
      const oneEachRates = { raw: [] as number[], coalesce: [] as number[], oneCall: [] as number[] };
      const oneEach = { latencies: [] as number[], answers: [] as GateAnswer[], errors: [] as string[] };
      /** The same keys' count, one event each, to the canary's one-call path (ONE_CALL_AGENT), with the same worker. */
      const oneCall = { answers: [] as GateAnswer[], errors: [] as string[] };
      /** Per round, wakes per second end to end: from its first offer until every run it made had closed. */
      const endToEnd = { coalesce: [] as number[], oneCall: [] as number[] };
      const perRoundOnes = Math.max(1, Math.floor(ONE_EACH_KEYS / ROUNDS));
      const oneEachDrainS: number[] = [];
      const oneEachRawLatencies: number[] = [];
      const oneEachRss: { keys: number; rssMb: number; cached: number }[] = [];
      // Each round's three series in turn, the order turned each round so none always goes first.
      const SERIES = ['raw', 'coalesce', 'oneCall'] as const;
      for (let r = 0; r < (runs('one-each') ? ROUNDS : 0); r++) {
        for (const kind of [...SERIES.slice(r % 3), ...SERIES.slice(0, r % 3)]) {
          await untilNoOpenRuns(client, [taskQueue]);
          const t0 = performance.now();
          if (kind === 'raw') oneEachRawLatencies.push(...(await runPool(perRoundOnes, CONCURRENCY, raw(`raw1-${tag}-${r}`))));
          // The round's wake keys share a prefix of their own: its runs are counted by it.
          const keys = `${kind === 'oneCall' ? 'direct' : 'one'}-${tag}-${r}.`;
          let started = 0;
          if (kind === 'oneCall') {
            const round = await pooled(perRoundOnes, (i) => admit({ entity: `${keys}${i}`, type: 'import' }, ONE_CALL_AGENT));
            oneCall.answers.push(...round.answers);
            oneCall.errors.push(...round.errors);
            started = round.answers.filter((a) => a.decision === 'started').length;
          } else if (kind === 'coalesce') {
            const round = await pooled(perRoundOnes, (i) => offer(`${keys}${i}`, 'import'));
            oneEach.latencies.push(...round.latencies);
            oneEach.answers.push(...round.answers);
            oneEach.errors.push(...round.errors);
            started = round.answers.filter((a) => a.decision === 'started').length;
          }
          oneEachRates[kind].push(perRoundOnes / ((performance.now() - t0) / 1000));
          if (kind !== 'raw') {
            // End to end: until every run the round's answers started has closed (counted, not waited out by a guess).
            const d0 = performance.now();
            await untilRunsClosed(keys, started);
            endToEnd[kind].push(perRoundOnes / ((performance.now() - t0) / 1000));
            // How long the worker takes to run what was admitted: the runs of this round end.
            if (kind === 'coalesce') oneEachDrainS.push(round((performance.now() - d0) / 1000));
          }
          if (kind === 'coalesce') {
            // RSS once this round's runs ended, with the keys so far: flat from round to round when the cache bounds it.
            oneEachRss.push({
              keys: (r + 1) * perRoundOnes,
              rssMb: rssMb(worker.getStatus().numCachedWorkflows, `afterRound${r + 1}`),
              cached: worker.getStatus().numCachedWorkflows,
            });
            // As it goes, for a long run (BENCH_ONE_EACH_KEYS=20000 takes about an hour on 2 cores).
            console.error(
              `one event per key, round ${r + 1}: ${JSON.stringify({ rates: oneEachRates, endToEnd, runsEndedAfterS: oneEachDrainS.at(-1), ...oneEachRss.at(-1), startsDeferred: offerStats.startsDeferred })}`,
            );
          }
        }
      }
      // Once the one-per-key runs have ended: each key's coalescer is left open, idle, until its horizon.
      await untilNoOpenRuns(client, [taskQueue]);
      const rssAfterOneEach = rssMb(worker.getStatus().numCachedWorkflows);
      const byRounds = (xs: number[]) => (xs.length * perRoundOnes) / xs.reduce((sum, rate) => sum + perRoundOnes / rate, 0);
      const oneEachRaw = byRounds(oneEachRates.raw);
      const oneEachCoalesce = byRounds(oneEachRates.coalesce);
      const endToEndCoalesce = byRounds(endToEnd.coalesce);
      const endToEndOneCall = byRounds(endToEnd.oneCall);
      const endToEndRatio = endToEndCoalesce / endToEndOneCall;
      const failedAnswers = oneEach.errors.length + oneCall.errors.length;
      const rssOverWarm = rssAfterOneEach / rssWarm;
      /** Phase 5's figures, each beside its target. */
      const oneEachTargets = [
        {
          figure: 'wakes per second end to end (offered until their runs closed), coalescing over one-call',
          value: round(endToEndRatio, 3),
          target: END_TO_END_RATIO_TARGET,
          atLeast: true,
          met: endToEndRatio >= END_TO_END_RATIO_TARGET,
        },
        { figure: 'answers failed, coalescing and one-call', value: failedAnswers, target: 0, met: failedAnswers === 0 },
        {
          figure: "RSS after the phase's runs ended, over the warm figure",
          value: round(rssOverWarm, 3),
          target: RSS_OVER_WARM_TARGET,
          met: rssOverWarm <= RSS_OVER_WARM_TARGET,
        },
      ];
      for (const e of [...warm.errors, ...many.errors, ...one.errors, ...oneEach.errors, ...oneCall.errors]) refusals.noteError(e);
      const inFlight = refusals.total();

      const hist = histograms({ one: one.latencies, many: many.latencies });
      const report = {
        rawStartsPerS: round(rawRate),
        coalescePerS: round(coalesceRate),
        ratio: round(coalesceRate / rawRate, 3),
        hotKey: {
          events: EVENTS,
          offeredPerS: round(EVENTS / SECONDS, 0),
          seconds: round(one.seconds),
          runs: hotRuns,
          bound,
          p99Ms: round(percentile(one.latencies, 99)),
          p50Ms: round(percentile(one.latencies, 50)),
          answeredPerS: round(EVENTS / one.seconds),
          answerMs: { p50: round(percentile(one.latencies, 50)), p99: round(percentile(one.latencies, 99)), histogram: hist.one },
          decisions: countDecisions(one.answers),
          errors: one.errors.length,
          firstError: one.errors[0],
          coalescerExecutions,
          /** Updates the gate sent again because the server held them past the offer sender's STUCK_AFTER_MS (at the coalescer's continue-as-new). */
          stuckUpdatesResent: offerStats.stuckResends - resent0,
          /** The longest time without any answer while offers were outstanding, ms, when it began (s after the first offer), and past a second the coalescer events beside it. */
          longestGap: await withCoalescerEvents(client, coalescerId, one.startedAt, longestGap(one.answeredAtMs)),
          timeline,
          dedup,
          payloads,
        },
        oneEventPerKey: {
          keys: perRoundOnes * ROUNDS,
          concurrency: CONCURRENCY,
          rawStartsPerS: round(oneEachRaw),
          coalescePerS: round(oneEachCoalesce),
          ratio: round(oneEachCoalesce / oneEachRaw, 3),
          perRound: { raw: oneEachRates.raw.map((x) => round(x)), coalesce: oneEachRates.coalesce.map((x) => round(x)) },
          /**
           * Wakes per second end to end, each round from its first offer until every run it made had
           * closed: coalescing (its 1 s debounce included), and the canary's one-call path with as
           * many keys in the same rounds, on the same worker. `admittedPerS`: the one-call path's
           * answers per second, as `coalescePerS` is the coalescing one's.
           */
          endToEnd: {
            coalescePerS: round(endToEndCoalesce),
            oneCallPerS: round(endToEndOneCall),
            ratio: round(endToEndRatio, 3),
            keysPerRound: perRoundOnes,
            perRound: { coalesce: endToEnd.coalesce.map((x) => round(x)), oneCall: endToEnd.oneCall.map((x) => round(x)) },
            oneCallAdmittedPerS: round(byRounds(oneEachRates.oneCall)),
            oneCallDecisions: countDecisions(oneCall.answers),
            oneCallErrors: oneCall.errors.length,
            oneCallFirstError: oneCall.errors[0],
          },
          targets: oneEachTargets,
          answerMs: { p50: round(percentile(oneEach.latencies, 50)), p99: round(percentile(oneEach.latencies, 99)) },
          /** A raw start's own latency at the same concurrency, in the same run: the floor an answer by start stands on. */
          rawStartMs: { p50: round(percentile(oneEachRawLatencies, 50)), p99: round(percentile(oneEachRawLatencies, 99)) },
          decisions: countDecisions(oneEach.answers),
          errors: oneEach.errors.length,
          firstError: oneEach.errors[0],
          /** RSS before the phase (the end of 4) and once its runs ended, with the workflows cached then (bound: WAKEGATE_WORKFLOW_CACHE). */
          rssMb: { before: rssEnd, after: rssAfterOneEach },
          /** After each round, once its runs ended: the keys so far, RSS and the workflows cached. */
          byRound: oneEachRss,
          /** Per round, seconds from its last answer until its runs had all ended (the worker's pace, not the gate's). */
          runsEndedAfterS: oneEachDrainS,
          cachedWorkflows: { before: cached.end, after: cached.afterOneEventPerKey },
          /** Coalescers started by the gate with their first offer (src/coalescer/coalescer-start.ts), over the whole run. */
          startsWithOffer: offerStats.starts,
          /** New keys sent by update instead, because the task queue's workflow backlog was over the gate's bound (src/coalescer/backlog.ts). */
          startsDeferred: offerStats.startsDeferred,
        },
        manyKeys: {
          keys: perRoundKeys * ROUNDS,
          eventsPerKey: PER_KEY,
          concurrency: CONCURRENCY,
          perRound: { raw: rates.raw.map((x) => round(x)), coalesce: rates.coalesce.map((x) => round(x)) },
          medianRoundRatio: round(
            percentile(
              rates.coalesce.map((c, i) => c / rates.raw[i]!),
              50,
            ),
            3,
          ),
          answerMs: { p50: round(percentile(many.latencies, 50)), p99: round(percentile(many.latencies, 99)), histogram: hist.many },
          decisions: countDecisions(many.answers),
          runs: manyRuns,
          errors: many.errors.length,
          firstError: many.errors[0],
        },
        rssMb: { beforeCacheFull: rssBeforeFill, cacheFull: rssCacheFull, warm: rssWarm, end: rssEnd, afterManyKeys: rssAfterMany },
        heapUsedMb: heap,
        cachedWorkflows: cached,
        /**
         * RSS grown over the warm-up's one-event keys per workflow the worker's cache gained meanwhile
         * (their coalescers stay open, idle, until their dedup horizon): what the cache's bound,
         * WAKEGATE_WORKFLOW_CACHE, costs per workflow.
         */
        rssKbPerCachedWorkflow:
          cached.cacheFull! > cached.beforeCacheFull!
            ? round(((rssCacheFull - rssBeforeFill) * 1024) / (cached.cacheFull! - cached.beforeCacheFull!), 0)
            : null,
        inFlightRefusals: inFlight,
        inFlightRefusalsFrom: refusals.sources(),
      };
      console.log(JSON.stringify(report, null, 2));
      const errors = warm.errors.length + many.errors.length + one.errors.length + oneEach.errors.length + oneCall.errors.length;
      // The bar, each check written down when it fails.
      const problems = [
        ...(errors > 0
          ? [`${errors} offers failed (first: ${warm.errors[0] ?? many.errors[0] ?? one.errors[0] ?? oneEach.errors[0] ?? oneCall.errors[0]})`]
          : []),
        ...(report.ratio < 0.8 ? [`coalescing over many keys at ${report.ratio}x raw starts, under 0.8x`] : []),
        ...(hotRuns > bound ? [`the hot key started ${hotRuns} runs, over its bound of ${bound}`] : []),
        ...(one.seconds > 75 ? [`the hot key's ${EVENTS} events took ${report.hotKey.seconds} s to be answered, over 75 s`] : []),
        ...(report.hotKey.p99Ms > 2000 ? [`the hot key's answers p99 ${report.hotKey.p99Ms} ms, over 2 s`] : []),
        ...(rssEnd > 1.15 * rssWarm ? [`RSS ${rssEnd} MB at the end, over 1.15x the warm ${rssWarm} MB`] : []),
        ...(inFlight > 0 ? [`${inFlight} updates refused with the in-flight limit`] : []),
        ...(report.oneEventPerKey.ratio < 0.8 ? [`one event per key at ${report.oneEventPerKey.ratio}x raw starts, under 0.8x`] : []),
        ...(report.oneEventPerKey.answerMs.p99 > 500 ? [`one event per key: answers p99 ${report.oneEventPerKey.answerMs.p99} ms, over 500 ms`] : []),
        ...(rssAfterOneEach > 1.15 * rssWarm ? [`RSS ${rssAfterOneEach} MB after one event per key, over 1.15x the warm ${rssWarm} MB`] : []),
        ...(runs('one-each') && !(endToEndRatio >= END_TO_END_RATIO_TARGET)
          ? [`one event per key end to end at ${round(endToEndRatio, 3)}x the one-call path's wakes per second, under ${END_TO_END_RATIO_TARGET}x`]
          : []),
        ...(payloads && payloads.overWarning > 0
          ? [
              `the hot key's coalescer sent ${payloads.overWarning} payloads over ${payloads.warnAtBytes} bytes (largest ${payloads.largestBytes}, ${payloads.largestKind})`,
            ]
          : []),
        ...(dedup.forgottenEarly > 0 ? [`the hot key's coalescer let ${dedup.forgottenEarly} events go before its horizon`] : []),
        ...(dedup.answeredFromFirstDecision < dedup.redelivered
          ? [
              `${dedup.redelivered - dedup.answeredFromFirstDecision} of ${dedup.redelivered} redeliveries of the hot key's events were not answered from their first decision`,
            ]
          : []),
      ];
      // One phase alone is not the benchmark's measure: its report is printed, the results file left as it is.
      if (!ONLY) await recorder.write(report, problems);
      if (problems.length > 0) console.error(problems.join('\n'));
      // The last line: the figures in one JSON line.
      const h = report.hotKey;
      console.log(
        JSON.stringify({
          bench: 'coalesce',
          rawStartsPerS: report.rawStartsPerS,
          coalescePerS: report.coalescePerS,
          ratio: report.ratio,
          hotKey: {
            events: h.events,
            offeredPerS: h.offeredPerS,
            seconds: h.seconds,
            runs: h.runs,
            bound: h.bound,
            p99Ms: h.p99Ms,
            forgottenEarly: h.dedup.forgottenEarly,
            largestPayloadBytes: h.payloads?.largestBytes,
          },
          oneEventPerKey: {
            ratio: report.oneEventPerKey.ratio,
            coalescePerS: report.oneEventPerKey.coalescePerS,
            rawStartsPerS: report.oneEventPerKey.rawStartsPerS,
            p99Ms: report.oneEventPerKey.answerMs.p99,
            rssMb: report.oneEventPerKey.rssMb.after,
            endToEndRatio: report.oneEventPerKey.endToEnd.ratio,
          },
          rssMb: { warm: rssWarm, end: rssEnd },
          inFlightRefusals: inFlight,
        }),
      );
      if (problems.length > 0) process.exitCode = 1;
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
