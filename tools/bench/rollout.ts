/**
 * `npm run bench:rollout`: what a rollout adds to a wake's admission. On its own dev server, two
 * workers run the canary side by side in one run: on one task queue an agent with no versions, on
 * the other the canary with v2 listed beside it under a 50% ramp (a rollout workflow ramping). Wakes
 * alternate between the two, one at a time (BENCH_WAKES each, default 200), each through the real
 * gate. Per wake, three figures: the gate's answer (event → accepted), the run's admission into
 * work (its start → its first step done: the step that, with a rollout, reads the rollout's view and
 * pins the version), and the whole wake (event → terminal). The gate reads no rollout, so the first
 * figure should not move; the second carries the view read, cached a second per worker process.
 */
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { DevServer } from '../../src/testing/dev-server';
import { loadConfig } from '../../src/config/config';
import { withSupervisorPolicy } from '../../src/supervisor/policy';
import { awaitRun } from '../../src/run/await-run';
import { actOnRollout } from '../../src/rollout/actions';
import { createWakeWorker } from '../../src/runtime/worker';
import { workflowBundle } from '../../test/helpers/env';
import { appOf } from '../../test/helpers/app';
import { oneCallAgents } from '../../test/helpers/agents';
import { versionedCanary } from '../../test/fixtures/rollout-agents';
import { standinSettings, startStandins } from '../standins';
import { benchRecorder } from './results';
import { eventTimeMs } from './cost-actions';
import { histograms, round } from './stats';

const BENCH_POLICY = withSupervisorPolicy({
  caps: { fleet: [{ windowMs: 3_600_000, wakes: 1_000_000, rationale: 'bench:rollout: a cap every run takes a permit from, never reached.' }], agents: {} },
});
const N = Number(process.env.BENCH_WAKES ?? 200);
const WARM_UP = 10;
const SHARE = 0.5;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}
const stats = (xs: number[]) => ({ p50: round(pct(xs, 50)), p99: round(pct(xs, 99)), max: round(Math.max(...xs)) });

async function main(): Promise<void> {
  const recorder = benchRecorder('rollout', {
    wakesEach: N,
    warmUpWakes: WARM_UP,
    share: SHARE,
    agent: 'canary (tool-only: two steps), one-call path, through the gate',
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost',
    measured: 'sequential wakes alternating between the two task queues; admission = the run started → its first step (prepareRun) completed, from its history',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const standins = await startStandins();
  const native = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await Connection.connect({ address: server.address }), namespace: server.namespace });
  const outside = loadConfig(standinSettings(standins.urls)).outside;
  const plain = oneCallAgents();
  const ramped = versionedCanary().agents;
  const sides = [
    { name: 'no rollout', taskQueue: 'bench-plain', agents: plain },
    { name: `a ${SHARE * 100}% ramp`, taskQueue: 'bench-ramp', agents: ramped },
  ];
  const bundle = await workflowBundle();
  const workers = await Promise.all(
    sides.map((s) =>
      createWakeWorker({
        connection: native,
        namespace: server.namespace,
        taskQueue: s.taskQueue,
        activities: appOf(s.agents).activities({ outside, supervisor: BENCH_POLICY }),
        workflowBundle: bundle,
        shutdownGraceTime: '1 second',
      }),
    ),
  );
  const running = workers.map((w) => w.run());
  const started = await actOnRollout(
    { client, taskQueue: 'bench-ramp', agent: 'canary', current: 'v1' },
    {
      kind: 'start',
      candidate: 'v2',
      share: SHARE,
      checks: [{ name: 'failures', metric: 'failures', bound: 1, minRuns: 1_000_000, onFail: 'finish' }],
      minRuns: 1_000_000,
      who: 'bench',
      reason: 'bench:rollout: a ramp that stands for the whole run',
    },
  );
  if (!started.ok) throw new Error(`the rollout did not start: ${started.message}`);
  const gates = sides.map((s) => appOf(s.agents).gate(client, s.taskQueue));
  const figures = sides.map(() => ({ answer: [] as number[], admission: [] as number[], wake: [] as number[], versions: {} as Record<string, number> }));
  const problems: string[] = [];
  const one = async (side: number, i: number, record: boolean) => {
    const t0 = performance.now();
    const answer = await gates[side]!.admit({ source: 'ping', entity: `bench-${side}-${i}`, type: 'check', occurredAt: '2026-12-07T00:00:00Z', payload: {} });
    const t1 = performance.now();
    const result = await awaitRun(client, answer);
    const t2 = performance.now();
    if (result.terminalReason !== 'success') problems.push(`${answer.runKey}: ended ${result.terminalReason}`);
    if (!record) return;
    const history = await client.workflow.getHandle(answer.runKey).fetchHistory();
    const events = history.events ?? [];
    const firstStep = events.find((e) => e.activityTaskCompletedEventAttributes);
    if (!firstStep) throw new Error(`${answer.runKey}: no completed step in its history`);
    const f = figures[side]!;
    f.answer.push(t1 - t0);
    f.admission.push(eventTimeMs(firstStep) - eventTimeMs(events[0]!));
    f.wake.push(t2 - t0);
    const version = result.agentVersion ?? 'none';
    f.versions[version] = (f.versions[version] ?? 0) + 1;
  };
  for (let i = 0; i < WARM_UP; i++) for (const side of [0, 1]) await one(side, -1 - i, false);
  // Alternate which side goes first, so a drift of the machine's load falls on both alike.
  for (let i = 0; i < N; i++) for (const side of i % 2 ? [1, 0] : [0, 1]) await one(side, i, true);

  const ramp = figures[1]!;
  const ran = Object.keys(ramp.versions).sort();
  if (ran.join() !== 'v1,v2') problems.push(`the ramp ran ${ran.join(', ')}: not both versions`);
  const series = (what: 'answer' | 'admission' | 'wake') => {
    const hist = histograms(Object.fromEntries(sides.map((s, i) => [s.name, figures[i]![what]])));
    return sides.map((s, i) => ({ name: s.name, ...stats(figures[i]![what]), histogram: hist[s.name]! }));
  };
  const results = {
    unit: 'ms',
    answer: series('answer'),
    admission: series('admission'),
    wake: series('wake'),
    rampVersions: ramp.versions,
    addedP50Ms: {
      answer: round(pct(ramp.answer, 50) - pct(figures[0]!.answer, 50)),
      admission: round(pct(ramp.admission, 50) - pct(figures[0]!.admission, 50)),
      wake: round(pct(ramp.wake, 50) - pct(figures[0]!.wake, 50)),
    },
  };
  console.log(`wakegate bench:rollout, ${N} wakes each side, alternating (ms p50 / p99)`);
  for (const what of ['answer', 'admission', 'wake'] as const)
    for (const s of results[what]) console.log(`${what.padEnd(10)} ${s.name.padEnd(14)} ${String(s.p50).padStart(8)} ${String(s.p99).padStart(8)}`);
  console.log(`the ramp adds at p50: answer ${results.addedP50Ms.answer} ms, admission ${results.addedP50Ms.admission} ms, wake ${results.addedP50Ms.wake} ms`);
  await recorder.write(results, problems);
  for (const w of workers) w.shutdown();
  await Promise.all(running);
  await client.connection.close();
  await native.close();
  await standins.close();
  await server.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
