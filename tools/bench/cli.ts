/**
 * `npm run bench:cli`: the `wakegate` command as scripts use it, on this project's own dev server.
 * 1. start-up: wall time of `wakegate --help` (the compiled bin, a fresh process each), p50/p99 over
 *    BENCH_STARTS runs, beside the same command run from source through tsx (what the bin did before);
 * 2. a burst: BENCH_EMITS `wakegate emit` processes (source ping, one entity each) at BENCH_PARALLEL
 *    at a time while a wake worker runs: how many were answered (exit 0 with a decision) within
 *    BENCH_TIMEOUT_MS, time to answer p50/p99/max, and the wall time of the whole burst; then every
 *    answered run is awaited, so the count of runs that ended `success` is in the report too.
 * Exits non-zero when an emit went unanswered or a run did not succeed.
 * Env: BENCH_STARTS (30), BENCH_EMITS (100), BENCH_PARALLEL (20), BENCH_TIMEOUT_MS (60000).
 */
import { spawn } from 'node:child_process';
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

const STARTS = Number(process.env.BENCH_STARTS ?? 30);
const EMITS = Number(process.env.BENCH_EMITS ?? 100);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 20);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 60_000);

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'wakegate.js');

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

async function main(): Promise<void> {
  const recorder = benchRecorder('cli', {
    startups: STARTS,
    emits: EMITS,
    parallel: PARALLEL,
    timeoutMs: TIMEOUT_MS,
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost; a wake worker in the benchmark process',
    deployment: 'WAKEGATE_APP default (wakegate.config.ts: the examples), loaded by every emit',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
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
    const burst = await worker.runUntil(async () => {
      const env = { TEMPORAL_ADDRESS: server.address, WAKEGATE_TASK_QUEUE: taskQueue, WAKEGATE_LOG_FORMAT: 'json' };
      const decisions: Record<string, number> = {};
      const workflowIds: string[] = [];
      const failures: string[] = [];
      const latencies: number[] = []; // spawn to exit of the answered calls
      const t0 = performance.now();
      await runPool(EMITS, PARALLEL, async (i) => {
        const run = await node([BIN, 'emit', '--source', 'ping', '--entity', `bench-${tag}-${i}`, '--type', 'bench', '--delivery-id', `bench-${i}`], env);
        let answer: { decision?: string; workflowId?: string } = {};
        try {
          answer = JSON.parse(run.stdout) as typeof answer;
        } catch {
          // not an answer: counted below
        }
        if (run.code !== 0 || !answer.decision || !answer.workflowId) {
          const why = run.timedOut ? `no answer within ${TIMEOUT_MS} ms` : `exit ${run.code}`;
          failures.push(`emit ${i}: ${why}; stdout ${JSON.stringify(run.stdout.slice(0, 300))}; stderr ${JSON.stringify(run.stderr.trim().slice(0, 300))}`);
          return;
        }
        decisions[answer.decision] = (decisions[answer.decision] ?? 0) + 1;
        workflowIds.push(answer.workflowId);
        latencies.push(run.ms);
      });
      const wallMs = performance.now() - t0;
      const results = await Promise.all(workflowIds.map((id) => client.workflow.getHandle(id).result() as Promise<RunResult>));
      const succeeded = results.filter((r) => r.terminalReason === 'success').length;
      return { decisions, latencies, wallMs, failures, succeeded };
    });

    // The two ways to start the CLI on one bin width, so their distributions can be drawn side by side.
    const startupHist = histograms({ compiled, fromSource });
    const report = {
      startup: {
        runs: STARTS,
        command: 'wakegate --help (node bin/wakegate.js: the compiled bundle lib/cli/main.js)',
        ms: stats(compiled, startupHist.compiled),
        fromSourceThroughTsx: { command: 'node --import tsx src/cli/main.ts --help', ms: stats(fromSource, startupHist.fromSource) },
      },
      emits: {
        calls: EMITS,
        parallel: PARALLEL,
        command: 'wakegate emit --source ping --entity <one per call> --type bench, one process per call, beside a running worker',
        answered: EMITS - burst.failures.length,
        decisions: burst.decisions,
        answerMs: stats(burst.latencies, histograms({ emits: burst.latencies }).emits),
        wallMs: round(burst.wallMs),
        runsSucceeded: burst.succeeded,
      },
    };
    console.log(JSON.stringify(report, null, 2));
    const problems = [
      ...burst.failures,
      ...(burst.succeeded === EMITS - burst.failures.length ? [] : [`${EMITS - burst.failures.length - burst.succeeded} answered runs did not end success`]),
    ];
    await recorder.write(report, problems);
    if (problems.length > 0) {
      console.error(`unanswered emits or runs that did not succeed:\n${problems.join('\n')}`);
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
