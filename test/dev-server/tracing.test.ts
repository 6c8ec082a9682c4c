import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { loadConfig } from '../../src/config/config';
import { startTracing, type Tracing } from '../../src/tracing/provider';
import { createWakeWorker, tracingWorkflowModules } from '../../src/runtime/worker';
import { startIngress, type RunningIngress } from '../../src/processes/ingress-listeners';
import type { AgentRegistry } from '../../src/agents/registry';
import type { WakeAnswer } from '../../src/core/decision';
import type { Wakegate } from '../../src/runtime/wakegate';
import { queueHandler } from '../../src/trigger/queue/handler';
import { runCli } from '../helpers/cli';
import type { RunResult } from '../../src/core/run-types';
import type { Standins } from '../../tools/standins';
import { eventually, useDevEnv, unique, workflowBundle } from '../helpers/env';
import { standinOutside } from '../helpers/outside';
import { startStandins } from '../../tools/standins';
import { appOf, exampleAgents } from '../helpers/app';
import { oneCallAgents, quickAgents, withPolicies } from '../helpers/agents';
import { campaignBody, post, standardHeaders } from '../helpers/ingress';

/*
 * One trace per wake, on the real dev server: tracing on in this process with an in-memory exporter
 * (the test hook of startTracing), a worker with the tracing interceptors and a bundle that includes
 * them, and the webhook ingress on a client that carries the trace; a signed webhook wakes the
 * campaign reporter (model turns, subagents' tool calls, two effects), and the spans are read back
 * as a tree.
 */
const env = useDevEnv();
let standins: Standins;
let tracing: Tracing;
let traced: Client;
let bundle: WorkflowBundleWithSourceMap;
const exporter = new InMemorySpanExporter();

before(async () => {
  await env.ready();
  tracing = startTracing(loadConfig({}).tracing, { exporter })!;
  standins = await startStandins({});
  traced = new Client({ connection: env.client.connection, namespace: 'default', interceptors: tracing.clientInterceptors });
  bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    workflowInterceptorModules: tracingWorkflowModules(),
    logger: new DefaultLogger('WARN'),
  });
});
after(async () => {
  await tracing?.shutdown();
  await standins?.close();
});

/** The reporter without a person in the loop: its irreversible export is approved by policy. */
const autoApproved = (agents: AgentRegistry) =>
  withPolicies(agents, (d) => (d.policy.name === 'campaign-reporter' ? { approval: { ...d.policy.approval, irreversible: 'auto' } } : undefined));

/** A worker with tracing on (the active tracing's interceptors and sink) and an ingress on the traced client, around `fn`. */
async function tracedFleet<T>(agents: AgentRegistry, fn: (ingress: RunningIngress, taskQueue: string, app: Wakegate) => Promise<T>): Promise<T> {
  const taskQueue = unique('tracing');
  const app = appOf(agents);
  const worker = await createWakeWorker({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    activities: app.activities({ outside: standinOutside(standins) }),
    workflowBundle: bundle,
    shutdownGraceTime: '1 second',
  });
  const config = { ...loadConfig({}).ingress, port: 0, host: '127.0.0.1', operatorPort: 0 };
  const ingress = await startIngress({ client: traced, taskQueue, registry: app.registry, sources: app.webhookSources, config, allowDevSecrets: true });
  try {
    return await worker.runUntil(fn(ingress, taskQueue, app));
  } finally {
    await ingress.close();
  }
}

const spans = () => exporter.getFinishedSpans();
const id = (s: ReadableSpan) => s.spanContext().spanId;
const trace = (s: ReadableSpan) => s.spanContext().traceId;
const named = (name: string, where: (s: ReadableSpan) => boolean = () => true) => spans().filter((s) => s.name === name && where(s));
const one = (name: string, where?: (s: ReadableSpan) => boolean) => {
  const found = named(name, where);
  assert.equal(found.length, 1, `one ${name} span: ${found.length} found`);
  return found[0]!;
};
const attr = (key: string, value: unknown) => (s: ReadableSpan) => s.attributes[key] === value;

/** The names from a span up to its trace's root, following parent ids among the exported spans. */
function pathToRoot(span: ReadableSpan): string[] {
  const byId = new Map(spans().map((s) => [id(s), s]));
  const names = [span.name];
  let at = span;
  while (at.parentSpanId) {
    const parent = byId.get(at.parentSpanId);
    assert.ok(parent, `${at.name}'s parent ${at.parentSpanId} was exported`);
    assert.equal(trace(parent), trace(at));
    names.push(parent.name);
    at = parent;
  }
  return names;
}

/** The workflow spans of one run are exported when its last workflow task completes: wait for its RunWorkflow span. */
const runSpan = (runKey: string) =>
  eventually(
    async () => named('RunWorkflow:runWorkflow', attr('wakegate.run_key', runKey)),
    (found) => found.length === 1,
    15_000,
    `the RunWorkflow span of ${runKey}`,
  ).then((found) => found[0]!);

describe('one trace per wake (OpenTelemetry, in-memory exporter, real dev server)', () => {
  test('a signed webhook on the one-call path: request, gate decision, start, run, model and tool calls and each effect in one trace, with the keys', async () => {
    await tracedFleet(autoApproved(oneCallAgents()), async (ingress) => {
      const campaign = unique('traced');
      const body = campaignBody(campaign);
      const answer = await post(`${ingress.url}/webhooks/campaigns`, body, standardHeaders(body, 'trace-msg-1'));
      assert.equal(answer.status, 202, JSON.stringify(answer.json));
      assert.equal(answer.json.decision, 'started');
      const runKey = answer.json.runKey!;
      const result = (await env.client.workflow.getHandle(runKey).result()) as RunResult;
      assert.equal(result.terminalReason, 'success', result.summary);
      const run = await runSpan(runKey);

      const request = one('POST /webhooks/:source', attr('wakegate.delivery_id', 'trace-msg-1'));
      assert.equal(request.parentSpanId, undefined, 'the webhook request is the root');
      assert.equal(request.attributes['http.response.status_code'], 202);
      assert.equal(request.attributes['wakegate.decision'], 'started');
      assert.equal(request.attributes['wakegate.event_key'], answer.json.eventKey);
      const root = trace(request);

      const admit = one('gate.admit', (s) => trace(s) === root);
      assert.equal(admit.attributes['wakegate.event_key'], answer.json.eventKey);
      assert.equal(admit.attributes['wakegate.decision'], 'started');
      const wake = one('gate.wake', (s) => trace(s) === root);
      assert.deepEqual(
        [wake.attributes['wakegate.agent'], wake.attributes['wakegate.wake_key'], wake.attributes['wakegate.run_key'], wake.attributes['wakegate.decision']],
        ['campaign-reporter', campaign, runKey, 'started'],
      );
      assert.deepEqual(pathToRoot(run), ['RunWorkflow:runWorkflow', 'StartWorkflow:runWorkflow', 'gate.wake', 'gate.admit', 'POST /webhooks/:source']);
      assert.equal(trace(run), root);
      assert.equal(run.attributes['wakegate.event_key'], answer.json.eventKey);
      assert.equal(run.attributes['wakegate.delivery_id'], 'trace-msg-1');
      assert.equal(run.attributes['wakegate.terminal_reason'], 'success');

      // The model turns of the run, each under the run.
      const turns = named('RunActivity:modelTurn', attr('wakegate.run_key', runKey));
      assert.ok(turns.length >= 1, 'a model turn');
      for (const t of turns) {
        assert.deepEqual(pathToRoot(t).slice(0, 3), ['RunActivity:modelTurn', 'StartActivity:modelTurn', 'RunWorkflow:runWorkflow']);
        assert.equal(trace(t), root);
        assert.equal(t.attributes['wakegate.agent'], 'campaign-reporter');
        assert.ok(Number(t.attributes['gen_ai.usage.input_tokens']) > 0, 'input tokens counted');
      }
      // The tool calls, in the subagents the run started (one per dashboard), in the same trace.
      const tools = named('RunActivity:toolCall', (s) => trace(s) === root);
      assert.equal(tools.length, 2, 'one read per dashboard');
      for (const t of tools) {
        assert.equal(t.attributes['wakegate.tool'], 'read_dashboard');
        assert.deepEqual(pathToRoot(t).slice(0, 5), [
          'RunActivity:toolCall',
          'StartActivity:toolCall',
          'RunWorkflow:subagentWorkflow',
          'StartChildWorkflow:subagentWorkflow',
          'RunWorkflow:runWorkflow',
        ]);
      }
      // Each effect, with its key, class and outcome.
      const effects = named('RunActivity:commitEffect', attr('wakegate.run_key', runKey));
      assert.deepEqual(effects.map((e) => e.attributes['wakegate.effect']).sort(), ['post_summary', 'start_export']);
      for (const e of effects) {
        assert.equal(trace(e), root);
        assert.match(String(e.attributes['wakegate.effect_key']), new RegExp(`^${runKey.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}#`));
        assert.ok(['provider_key', 'reconcile'].includes(String(e.attributes['wakegate.effect_class'])));
        assert.equal(e.attributes['wakegate.outcome'], 'applied');
        assert.equal(pathToRoot(e).at(-1), 'POST /webhooks/:source');
      }
      // Nothing of this wake went to another trace.
      const ofRun = spans().filter((s) => String(s.attributes['wakegate.run_key'] ?? s.attributes.workflowId ?? '').startsWith(runKey));
      assert.deepEqual([...new Set(ofRun.map(trace))], [root]);

      // Spans change no command: the run's history replays with the tracing interceptors and without.
      const history = await env.client.workflow.getHandle(runKey).fetchHistory();
      await Worker.runReplayHistory({ workflowBundle: bundle, ...tracing.workerOptions() }, history, runKey);
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, runKey);
    });
  });

  test("a coalesced wake: the run joins the trace of the event that opened its batch and links to the absorbed event's", async () => {
    await tracedFleet(autoApproved(quickAgents({}, exampleAgents)), async (ingress) => {
      const campaign = unique('coalesced');
      const url = `${ingress.url}/webhooks/campaigns`;
      const firstBody = campaignBody(campaign, { type: 'config.changed' });
      const first = await post(url, firstBody, standardHeaders(firstBody, 'trace-open'));
      // Sent once the first is decided (each its own offer, the two never sent together in one update).
      const secondBody = campaignBody(campaign, { type: 'report.due' });
      const second = await post(url, secondBody, standardHeaders(secondBody, 'trace-absorbed'));
      assert.equal(first.json.decision, 'started', JSON.stringify(first.json));
      assert.equal(second.json.decision, 'coalesced', JSON.stringify(second.json));
      const runKey = first.json.runKey!;
      assert.equal(second.json.runKey, runKey);
      const result = await appOf(exampleAgents).awaitRun(env.client, first.json as unknown as WakeAnswer);
      assert.equal(result.terminalReason, 'success', result.summary);
      const run = await runSpan(runKey);

      const openRequest = one('POST /webhooks/:source', attr('wakegate.delivery_id', 'trace-open'));
      const absorbedRequest = one('POST /webhooks/:source', attr('wakegate.delivery_id', 'trace-absorbed'));
      assert.notEqual(trace(openRequest), trace(absorbedRequest), 'each delivery is its own trace');
      const openWake = one('gate.wake', (s) => trace(s) === trace(openRequest));
      const absorbedWake = one('gate.wake', (s) => trace(s) === trace(absorbedRequest));
      assert.equal(openWake.attributes['wakegate.decision'], 'started');
      assert.equal(absorbedWake.attributes['wakegate.decision'], 'coalesced');

      // The run: in the opening event's trace, started by the coalescer in that event's context.
      assert.equal(trace(run), trace(openRequest));
      assert.deepEqual(pathToRoot(run), ['RunWorkflow:runWorkflow', 'StartChildWorkflow:runWorkflow', 'gate.wake', 'gate.admit', 'POST /webhooks/:source']);
      assert.equal(run.attributes['wakegate.origin'], 'batch');
      assert.equal(run.attributes['wakegate.absorbed'], 2);
      // ...and linked to the absorbed event's gate span.
      assert.deepEqual(
        run.links.map((l) => [l.context.traceId, l.context.spanId, l.attributes?.['wakegate.link']]),
        [[trace(absorbedRequest), id(absorbedWake), 'absorbed']],
      );
      const turn = named('RunActivity:modelTurn', attr('wakegate.run_key', runKey));
      assert.ok(turn.length >= 1 && turn.every((t) => trace(t) === trace(openRequest)));
      const effects = named('RunActivity:commitEffect', attr('wakegate.run_key', runKey));
      assert.equal(effects.length, 2);
      assert.ok(effects.every((e) => trace(e) === trace(openRequest)));

      // Each event's way to the coalescer stays in its own trace: the opening event's start of the
      // coalescer with it (a new key's first event goes by start), the absorbed event's offer and the
      // coalescer's update handler.
      const started = one('StartWorkflow:coalescerWorkflow', (s) => trace(s) === trace(openRequest));
      assert.deepEqual(pathToRoot(started), ['StartWorkflow:coalescerWorkflow', 'gate.wake', 'gate.admit', 'POST /webhooks/:source']);
      assert.equal(named('HandleUpdate:offer', (s) => trace(s) === trace(openRequest)).length, 0, 'no update for the opening event');
      const handled = one('HandleUpdate:offer', (s) => trace(s) === trace(absorbedRequest));
      assert.deepEqual(pathToRoot(handled), ['HandleUpdate:offer', 'UpdateWithStartWorkflow:offer', 'gate.wake', 'gate.admit', 'POST /webhooks/:source']);
      assert.equal(named('RunWorkflow:runWorkflow', (s) => trace(s) === trace(absorbedRequest)).length, 0, 'no run in the absorbed trace');

      const history = await env.client.workflow.getHandle(runKey).fetchHistory();
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, runKey);
    });
  });

  test("a queue message and a CLI emit each start their wake's trace; the CLI exports its spans by the standard variables and its run joins them", async () => {
    await tracedFleet(exampleAgents, async (_ingress, taskQueue, app) => {
      // A queue message: the consumer's span is the root.
      const gate = app.gate(traced, taskQueue);
      const handle = queueHandler({ gate, client: traced, temporalTimeoutMs: 10_000, maxAttempts: 5 });
      const entity = unique('queued');
      const settled = await handle({
        id: '1700000000000-0',
        source: 'ping',
        body: JSON.stringify({ entity, type: 'queued', occurredAt: new Date().toISOString() }),
        attempts: 1,
      });
      await gate.close();
      assert.deepEqual(settled, { kind: 'ack', decision: 'started' });
      const message = one('process ping', attr('messaging.message.id', '1700000000000-0'));
      assert.equal(message.parentSpanId, undefined);
      assert.equal(message.attributes['wakegate.queue.settlement'], 'ack');
      const queuedRun = one('gate.wake', (s) => trace(s) === trace(message)).attributes['wakegate.run_key'] as string;
      await env.client.workflow.getHandle(queuedRun).result();
      assert.deepEqual(pathToRoot(await runSpan(queuedRun)), [
        'RunWorkflow:runWorkflow',
        'StartWorkflow:runWorkflow',
        'gate.wake',
        'gate.admit',
        'process ping',
      ]);

      // `wakegate emit --wait` in its own process, on by OTEL_TRACES_EXPORTER alone: its spans are JSON lines on its stderr.
      const cli = await runCli(['emit', '--source', 'ping', '--entity', unique('emitted'), '--type', 'check', '--delivery-id', 'cli-trace-1', '--wait'], {
        TEMPORAL_ADDRESS: env.server.address,
        WAKEGATE_TASK_QUEUE: taskQueue,
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_SERVICE_NAME: 'wakegate-cli-test',
      });
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal(cli.json.decision, 'started');
      assert.equal(cli.json.terminalReason, 'success');
      const cliSpans = cli.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes: Record<string, unknown> });
      const byName = (n: string) => cliSpans.find((s) => s.name === n)!;
      const [emit, admit, wake, start] = ['wakegate emit', 'gate.admit', 'gate.wake', 'StartWorkflow:runWorkflow'].map(byName);
      assert.ok(emit && admit && wake && start, cli.stderr);
      assert.equal(emit.parentSpanId, undefined);
      assert.deepEqual([admit.parentSpanId, wake.parentSpanId, start.parentSpanId], [emit.spanId, admit.spanId, wake.spanId]);
      assert.equal(new Set(cliSpans.map((s) => s.traceId)).size, 1);
      assert.equal(emit.attributes['wakegate.decision'], 'started');
      assert.equal(emit.attributes['wakegate.terminal_reason'], 'success', 'the wait is part of the command, and of its span');
      assert.equal(admit.attributes['wakegate.delivery_id'], 'cli-trace-1');
      // The run, on this process's worker, continues the CLI's trace under its start.
      const runKey = cli.json.runKey as string;
      await env.client.workflow.getHandle(runKey).result();
      const run = await runSpan(runKey);
      assert.equal(trace(run), emit.traceId);
      assert.equal(run.parentSpanId, start.spanId);
    });
  });
});
