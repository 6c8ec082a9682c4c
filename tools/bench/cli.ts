/**
 * `npm run bench:cli`: the `wakegate` command as scripts use it, on this project's own dev server.
 * 1. start-up: wall time of `wakegate --help` (the compiled bin, a fresh process each), p50/p99 over
 *    BENCH_STARTS runs, beside the same command run from source through tsx (what the bin did before);
 * 2. for each way to write the deployment module (the checkout's TypeScript `wakegate.config.ts`,
 *    loaded through tsx, and the same compiled to JavaScript, loaded by node alone):
 *    - one at a time: BENCH_SINGLE `wakegate emit` processes in a row, each beside a `node -e 0` run
 *      just before it (the same load for both), time to answer p50/p99 and its p50 over node's; the
 *      first call runs in its own process and starts the resident process the others ask
 *      (src/cli/resident.ts), and is reported apart as the cold call;
 *    - a burst: BENCH_EMITS processes at BENCH_PARALLEL at a time while a wake worker runs: how many
 *      were answered (exit 0 with a decision) within BENCH_TIMEOUT_MS, time to answer p50/p99/max, the
 *      wall time of the burst, and how many of their runs ended `success`;
 *    each beside the targets (one at a time p50 <= 400 ms and <= 2.5x node -e 0, the burst p50 <= 3 s), met or not;
 *    and for the compiled deployment the same one-at-a-time calls with WAKEGATE_RESIDENT=off (each
 *    in its own process, as before the resident process), for comparison;
 * 3. `wakegate emit --file` against raw `client.workflow.start` in this run (tools/bench/cli-file.ts):
 *    BENCH_FILE_EVENTS events at BENCH_FILE_CONCURRENCY, its rate over raw's (target >= 0.8), and
 *    the same file again answered from the runs it started.
 * Exits non-zero when an emit went unanswered or a run did not succeed (a missed target is reported, not an error).
 * Env: BENCH_STARTS (30), BENCH_SINGLE (20), BENCH_EMITS (100), BENCH_PARALLEL (20), BENCH_TIMEOUT_MS (60000),
 * BENCH_FILE_EVENTS (2000), BENCH_FILE_CONCURRENCY (32).
 */
import { spawn } from 'node:child_process';
import { build as esbuild } from 'esbuild';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DevServer } from '../../src/testing/dev-server';
import { createWakeWorker } from '../../src/runtime/worker';
import type { RunResult } from '../../src/core/run-types';
import { histograms, percentile, round, runPool, type Histogram } from './stats';
import { exampleApp } from '../../test/helpers/app';
import { benchRecorder } from './results';
import { filePhase } from './cli-file';

const STARTS = Number(process.env.BENCH_STARTS ?? 30);
const SINGLE = Number(process.env.BENCH_SINGLE ?? 20);
const EMITS = Number(process.env.BENCH_EMITS ?? 100);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 20);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 60_000);
const FILE_EVENTS = Number(process.env.BENCH_FILE_EVENTS ?? 2000);
const FILE_CONCURRENCY = Number(process.env.BENCH_FILE_CONCURRENCY ?? 32);

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'wakegate.js');
/** The targets of the command's speed (the issue that asked for them): answers, spawn to exit. */
const TARGETS = { singleP50Ms: 400, burstP50Ms: 3000, singleOverNode: 2.5, fileOverRaw: 0.8 };
/** The checkout's deployment, and the same compiled to JavaScript (built here, under lib/, beside the compiled package it requires). */
const DEPLOYMENTS = {
  ts: { module: 'wakegate.config.ts', how: 'TypeScript, loaded through tsx' },
  js: { module: 'lib/bench/wakegate.config.js', how: 'the same compiled to JavaScript (esbuild), loaded by node alone; it requires the compiled package' },
} as const;
type DeploymentName = keyof typeof DEPLOYMENTS;

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

/** Run `node ARGS` from the project root and time it from spawn to exit. */
function node(args: string[], env: Record<string, string> = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    child.on('error', reject);
    // 'close', not 'exit': under load the output can still be in the pipes when the process has exited.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - t0, timedOut });
    });
  });
}

const stats = (xs: number[], histogram?: Histogram) => ({
  p50: round(percentile(xs, 50)),
  p99: round(percentile(xs, 99)),
  max: round(Math.max(...xs)),
  ...(histogram ? { histogram } : {}),
});

/** `--help` start-up times of one way to run the CLI; fails on anything but a help text and exit 0. */
async function startups(args: string[]): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const run = await node([...args, '--help']);
    if (run.code !== 0 || !run.stdout.includes('Usage: wakegate')) throw new Error(`${args.join(' ')} --help failed (exit ${run.code}): ${run.stderr}`);
    times.push(run.ms);
  }
  return times;
}

/** `npm run build`, then the deployment compiled to JavaScript: its own code bundled, every package (wakegate too) required. */
async function buildDeployments(): Promise<void> {
  const built = await node([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')]);
  if (built.code !== 0) throw new Error(`tsc -p tsconfig.build.json failed: ${built.stdout}${built.stderr}`);
  await esbuild({
    absWorkingDir: ROOT,
    entryPoints: ['wakegate.config.ts'],
    outfile: path.join(ROOT, DEPLOYMENTS.js.module),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    packages: 'external',
    // By name, not by tsconfig's path to src/: the deployment requires the compiled package, as a user's does.
    external: ['wakegate'],
    logLevel: 'warning',
  });
}

interface Emits {
  decisions: Record<string, number>;
  latencies: number[];
  wallMs: number;
  failures: string[];
  runKeys: string[];
}

/** BENCH_SINGLE emit processes in a row, each after a `node -e 0` run: the baseline under the same load. */
async function singles(env: Record<string, string>, tag: string): Promise<Emits & { nodeMs: number[] }> {
  const nodeMs: number[] = [];
  const out = await emits(env, tag, SINGLE, 1, async () => {
    const base = await node(['-e', '0']);
    if (base.code !== 0) throw new Error(`node -e 0 failed (exit ${base.code}): ${base.stderr}`);
    nodeMs.push(base.ms);
  });
  return { ...out, nodeMs };
}

/** `count` emit processes, `parallel` at a time, each about an entity of its own (`before` runs before each call). */
async function emits(env: Record<string, string>, tag: string, count: number, parallel: number, before?: () => Promise<void>): Promise<Emits> {
  const out: Emits = { decisions: {}, latencies: [], wallMs: 0, failures: [], runKeys: [] };
  const t0 = performance.now();
  await runPool(count, parallel, async (i) => {
    await before?.();
    const run = await node([BIN, 'emit', '--source', 'ping', '--entity', `bench-${tag}-${i}`, '--type', 'bench', '--delivery-id', `bench-${i}`], env);
    let answer: { decision?: string; runKey?: string } = {};
    try {
      answer = JSON.parse(run.stdout) as typeof answer;
    } catch {
      // not an answer: counted below
    }
    if (run.code !== 0 || !answer.decision || !answer.runKey) {
      const why = run.timedOut ? `no answer within ${TIMEOUT_MS} ms` : `exit ${run.code}`;
      out.failures.push(
        `${tag} emit ${i}: ${why}; stdout ${JSON.stringify(run.stdout.slice(0, 300))}; stderr ${JSON.stringify(run.stderr.trim().slice(0, 300))}`,
      );
      return;
    }
    out.decisions[answer.decision] = (out.decisions[answer.decision] ?? 0) + 1;
    out.runKeys.push(answer.runKey);
    out.latencies.push(run.ms);
  });
  out.wallMs = performance.now() - t0;
  return out;
}

async function main(): Promise<void> {
  const recorder = benchRecorder('cli', {
    startups: STARTS,
    single: SINGLE,
    emits: EMITS,
    parallel: PARALLEL,
    timeoutMs: TIMEOUT_MS,
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; a wake worker in the benchmark process',
    deployments: Object.fromEntries(Object.entries(DEPLOYMENTS).map(([k, d]) => [k, `${d.module}: ${d.how}`])),
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  await buildDeployments();
  // Start-up first, on a quiet machine: no server or worker running yet.
  await startups([BIN]); // warm the file cache
  const compiled = await startups([BIN]);
  const fromSource = await startups(['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts')]);

  const server = await DevServer.start();
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  try {
    const tag = randomUUID().slice(0, 8);
    const taskQueue = `bench-cli-${tag}`;
    const worker = await createWakeWorker({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue,
      shutdownGraceTime: '1 second',
      activities: exampleApp.activities(),
    });
    type Single = Emits & { nodeMs: number[] };
    const measured = await worker.runUntil(async () => {
      const out: Partial<Record<DeploymentName, { single: Single; burst: Emits; succeeded: number }>> = {};
      let inProcess: Single | undefined;
      for (const name of Object.keys(DEPLOYMENTS) as DeploymentName[]) {
        const env = { TEMPORAL_ADDRESS: server.address, WAKEGATE_TASK_QUEUE: taskQueue, WAKEGATE_LOG_FORMAT: 'json', WAKEGATE_APP: DEPLOYMENTS[name].module };
        const single = await singles(env, `${tag}-${name}-single`);
        const burst = await emits(env, `${tag}-${name}-burst`, EMITS, PARALLEL);
        if (name === 'js') inProcess = await singles({ ...env, WAKEGATE_RESIDENT: 'off' }, `${tag}-${name}-in-process`);
        const ids = [...single.runKeys, ...burst.runKeys, ...(name === 'js' ? inProcess!.runKeys : [])];
        const results = await Promise.all(ids.map((id) => client.workflow.getHandle(id).result() as Promise<RunResult>));
        out[name] = { single, burst, succeeded: results.filter((r) => r.terminalReason === 'success').length };
      }
      return { ...(out as Record<DeploymentName, { single: Single; burst: Emits; succeeded: number }>), inProcess: inProcess! };
    });
    const file = await filePhase({
      client,
      events: FILE_EVENTS,
      concurrency: FILE_CONCURRENCY,
      tag,
      env: { TEMPORAL_ADDRESS: server.address, WAKEGATE_LOG_FORMAT: 'json', WAKEGATE_APP: DEPLOYMENTS.js.module },
      wakegate: (args, env) => node([BIN, ...args], env),
    });

    // The two ways to start the CLI on one bin width, so their distributions can be drawn side by side; the same for the deployments.
    const startupHist = histograms({ compiled, fromSource });
    const singleHist = histograms({
      ts: measured.ts.single.latencies,
      js: measured.js.single.latencies,
      node: measured.js.single.nodeMs,
      inProcess: measured.inProcess.latencies,
    });
    const burstHist = histograms({ ts: measured.ts.burst.latencies, js: measured.js.burst.latencies });
    /** One-at-a-time figures: the calls, the cold first one, p50/p99, the `node -e 0` runs beside them and p50 over node's. */
    const singleOf = (m: Single, hist?: Histogram) => {
      const answerMs = stats(m.latencies, hist);
      const nodeMs = stats(m.nodeMs, hist === singleHist.js ? singleHist.node : undefined);
      return {
        calls: SINGLE,
        answered: SINGLE - m.failures.length,
        answerMs,
        coldMs: round(m.latencies[0] ?? NaN),
        nodeMs,
        overNode: round(answerMs.p50 / nodeMs.p50, 2),
      };
    };
    const deployments = Object.fromEntries(
      (Object.keys(DEPLOYMENTS) as DeploymentName[]).map((name) => {
        const m = measured[name];
        const single = singleOf(m.single, singleHist[name]);
        const burst = stats(m.burst.latencies, burstHist[name]);
        return [
          name,
          {
            module: DEPLOYMENTS[name].module,
            how: DEPLOYMENTS[name].how,
            single,
            burst: {
              calls: EMITS,
              parallel: PARALLEL,
              answered: EMITS - m.burst.failures.length,
              decisions: m.burst.decisions,
              answerMs: burst,
              wallMs: round(m.burst.wallMs),
            },
            runsSucceeded: m.succeeded,
            targetsMet: {
              single: single.answerMs.p50 <= TARGETS.singleP50Ms,
              singleOverNode: single.overNode <= TARGETS.singleOverNode,
              burst: burst.p50 <= TARGETS.burstP50Ms,
            },
          },
        ];
      }),
    );
    const js = deployments.js as { single: ReturnType<typeof singleOf> };
    const report = {
      startup: {
        runs: STARTS,
        command: 'wakegate --help (node bin/wakegate.js: the compiled bundle lib/cli/main.js)',
        ms: stats(compiled, startupHist.compiled),
        fromSourceThroughTsx: { command: 'node --import tsx src/cli/main.ts --help', ms: stats(fromSource, startupHist.fromSource) },
      },
      emitCommand: 'wakegate emit --source ping --entity <one per call> --type bench, one process per call, beside a running worker',
      targets: TARGETS,
      // The headline figures, each beside its target: the compiled deployment, one emit at a time, over node -e 0; emit --file over raw starts.
      headline: {
        singleOverNode: {
          figure: js.single.overNode,
          emitP50Ms: js.single.answerMs.p50,
          nodeP50Ms: js.single.nodeMs.p50,
          target: TARGETS.singleOverNode,
          met: js.single.overNode <= TARGETS.singleOverNode,
        },
        fileOverRaw: {
          figure: file.ratio,
          fileEventsPerSecond: file.file.eventsPerSecond,
          rawStartsPerSecond: file.raw.startsPerSecond,
          target: TARGETS.fileOverRaw,
          met: file.ratio >= TARGETS.fileOverRaw,
        },
      },
      deployments,
      inProcess: {
        how: 'the compiled deployment with WAKEGATE_RESIDENT=off: every emit loads the deployment and the Temporal client in its own process',
        single: singleOf(measured.inProcess, singleHist.inProcess),
      },
      file: {
        command: `wakegate emit --file <${FILE_EVENTS} lines> --concurrency ${FILE_CONCURRENCY}, the compiled deployment, no worker on its queue; raw: client.workflow.start with unique IDs at the same concurrency, no worker`,
        ...file,
      },
    };
    console.log(JSON.stringify(report, null, 2));
    const problems = (Object.keys(DEPLOYMENTS) as DeploymentName[])
      .flatMap((name) => {
        const m = measured[name];
        const answered = m.single.runKeys.length + m.burst.runKeys.length;
        const all = answered + (name === 'js' ? measured.inProcess.runKeys.length : 0);
        return [
          ...m.single.failures,
          ...m.burst.failures,
          ...(name === 'js' ? measured.inProcess.failures : []),
          ...(m.succeeded === all ? [] : [`${name}: ${all - m.succeeded} answered runs did not end success`]),
        ];
      })
      .concat(file.problems);
    await recorder.write(report, problems);
    if (problems.length > 0) {
      console.error(`unanswered emits, runs that did not succeed, or emit --file problems:\n${problems.join('\n')}`);
      process.exitCode = 1;
    }
  } finally {
    await client.connection.close();
    await nativeConnection.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
