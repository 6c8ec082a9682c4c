/**
 * `npm run bench:run`: overhead of the run machinery. On its own dev server, times a `no_op` run and a
 * three-step run (precheck, model turn, effect) of the dependency-bump agent from accepted wake to
 * terminal state, p50/p99 over N runs each (BENCH_RUNS, default 200), beside the same activities as
 * bare calls in a bare workflow, and prints the ratio. Sequential runs: latency, not throughput.
 * The supervisor is on with a benchmark policy: 420 dependency-bump runs are over its default cap of
 * 120 an hour, so the caps are raised out of the way but kept (every run, and the bare series'
 * prepareRun, takes a permit from the supervisor as a real run's first step does).
 */
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { DevServer } from '../../src/testing/dev-server';
import { loadConfig } from '../../src/config/config';
import { standinSettings, startStandins } from '../standins';
import { keyEvent } from '../../src/gate/gate';
import { effectKey } from '../../src/gate/keys';
import type { RunInput } from '../../src/core/run-types';
import { withSupervisorPolicy } from '../../src/supervisor/policy';
import { registryOf, activitiesOf, exampleAgents } from '../../test/helpers/app';
import { benchRecorder } from './results';
import { histograms, round } from './stats';

const BENCH_POLICY = withSupervisorPolicy({
  caps: { fleet: [{ windowMs: 3_600_000, wakes: 1_000_000, rationale: 'bench:run: a cap every run takes a permit from, never reached.' }], agents: {} },
});

const N = Number(process.env.BENCH_RUNS ?? 200);
const WARM_UP = 10;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

async function main(): Promise<void> {
  const recorder = benchRecorder('run', {
    runs: N,
    warmUpRuns: WARM_UP,
    agent: 'dependency-bump (examples/), offline model through aiSdkModel, local stand-ins',
    temporal: 'dev server of its own (temporal server start-dev, SQLite), localhost',
    supervisor: 'on, with a benchmark policy: caps kept but out of reach, so every run takes a permit at its first step',
    measured: 'accepted wake (the start call returned) → terminal state, sequential runs',
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await DevServer.start();
  const standins = await startStandins();
  const connection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await Connection.connect({ address: server.address }), namespace: server.namespace });
  const activities = activitiesOf({ outside: loadConfig(standinSettings(standins.urls)).outside, supervisor: BENCH_POLICY });
  const wakeWorker = await Worker.create({
    connection,
    taskQueue: 'bench-wake',
    activities,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') }),
  });
  const bareWorker = await Worker.create({
    connection,
    taskQueue: 'bench-bare',
    activities,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflow'), logger: new DefaultLogger('WARN') }),
  });
  const policy = exampleAgents['dependency-bump']!.policy;
  const input = (i: number, kind: string, to: string): RunInput =>
    keyEvent(registryOf(), {
      source: 'deps',
      entity: `bench/${kind}:pkg${i}`,
      type: 'check.due',
      occurredAt: '2026-12-02T00:00:00Z',
      payload: { repo: `bench/${kind}`, package: `pkg${i}`, from: '1.0.0', to },
    }).input;

  const time = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const series = async (name: string, one: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < WARM_UP; i++) await one(-1 - i);
    const xs: number[] = [];
    for (let i = 0; i < N; i++) xs.push(await time(() => one(i)));
    return { name, p50: pct(xs, 50), p99: pct(xs, 99), samples: xs };
  };
  // "Accepted wake → terminal state": the timer starts once the start call is accepted.
  const wake = (kind: string, to: string) => async (i: number) => {
    const h = await client.workflow.start('runWorkflow', { workflowId: `${kind}-${i}-${Date.now()}`, taskQueue: 'bench-wake', args: [input(i, kind, to)] });
    return h.result();
  };
  const bare = (kind: string, three: boolean) => async (i: number) => {
    const inp = input(i, `${kind}-bare`, three ? '2.0.0' : '1.0.0');
    const tool = {
      agent: 'dependency-bump',
      tool: 'check_dependency',
      runKey: inp.runKey,
      wakeKey: inp.wakeKey,
      entity: inp.entity,
      payload: inp.payload,
      args: {},
    };
    const run = { runKey: inp.runKey, wakeKey: inp.wakeKey, entity: inp.entity, eventKey: inp.eventKey };
    // The same activities with the same inputs as the run's: the model turn through the AI SDK's
    // offline provider, read against the agent's answer schema and its decide; the effect by its class.
    const prompt = `${policy.systemPrompt}\n\nWhen you are done, answer with exactly one JSON object matching this JSON Schema: ${JSON.stringify(policy.answerSchema)}`;
    const event = { key: inp.eventKey, type: inp.type, entity: inp.entity, payload: inp.payload };
    const steps = [
      { name: 'prepareRun', arg: { agent: 'dependency-bump', payloads: [inp.payload] } },
      { name: 'toolCall', arg: tool },
      ...(three
        ? [
            {
              name: 'modelTurn',
              arg: {
                agent: 'dependency-bump',
                messages: [
                  { role: 'system', content: prompt },
                  { role: 'user', content: JSON.stringify({ task: policy.description, event, observations: [{ changed: true, headline: 'bump' }] }) },
                ],
                tools: [],
                maxOutputTokens: 300,
                answer: 'agent',
                run: { ...run, payload: inp.payload },
              },
            },
            {
              name: 'commitEffect',
              arg: {
                agent: 'dependency-bump',
                effectKey: effectKey(inp.runKey, 'open_pull_request', 0),
                effect: policy.effects[0],
                args: { repo: `bench/${kind}-bare`, branch: `bump/pkg${i}-2.0.0`, title: `Bump pkg${i} from 1.0.0 to 2.0.0`, body: 'b' },
                run,
              },
            },
          ]
        : []),
    ];
    const h = await client.workflow.start('bareWorkflow', { workflowId: `bare-${kind}-${i}-${Date.now()}`, taskQueue: 'bench-bare', args: [steps] });
    return h.result();
  };

  const results = await wakeWorker.runUntil(() =>
    bareWorker.runUntil(async () => [
      await series('no_op run (wake)', wake('noop', '1.0.0')),
      await series('no_op steps (bare)', bare('noop', false)),
      await series('three-step run (wake)', wake('three', '2.0.0')),
      await series('three steps (bare)', bare('three', true)),
    ]),
  );
  const fmt = (x: number) => x.toFixed(1).padStart(7);
  console.log(`wakegate bench:run, ${N} sequential runs each, dev server on this machine (ms, accepted → terminal)`);
  console.log('series                      p50      p99');
  for (const r of results) console.log(`${r.name.padEnd(24)}${fmt(r.p50)}  ${fmt(r.p99)}`);
  const [nw, nb, tw, tb] = results as [(typeof results)[0], (typeof results)[0], (typeof results)[0], (typeof results)[0]];
  console.log(`ratio no_op       p50 ${(nw.p50 / nb.p50).toFixed(2)}x  p99 ${(nw.p99 / nb.p99).toFixed(2)}x`);
  console.log(`ratio three-step  p50 ${(tw.p50 / tb.p50).toFixed(2)}x  p99 ${(tw.p99 / tb.p99).toFixed(2)}x`);
  const ratio = (a: number, b: number) => round(a / b, 2);
  // All four series on one bin width, so their distributions can be drawn side by side.
  const hist = histograms(Object.fromEntries(results.map((r) => [r.name, r.samples])));
  await recorder.write({
    unit: 'ms, accepted → terminal, sequential',
    series: results.map((r) => ({ name: r.name, p50: round(r.p50), p99: round(r.p99), histogram: hist[r.name]! })),
    ratio: { noOp: { p50: ratio(nw.p50, nb.p50), p99: ratio(nw.p99, nb.p99) }, threeStep: { p50: ratio(tw.p50, tb.p50), p99: ratio(tw.p99, tb.p99) } },
  });
  await client.connection.close();
  await connection.close();
  await standins.close();
  await server.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
