import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ConfigError, loadConfig } from '../../src/config/config';
import { activeTracing, startTracing } from '../../src/tracing/provider';
import { currentTraceparent, inSpan, untraced } from '../../src/tracing/spans';
import { batchTraceparents, formatTraceparent, parseTraceparent, workflowAttributes } from '../../src/core/trace-context';
import { activityInputAttributes, activityResultAttributes } from '../../src/tracing/activity';
import { tracingOn } from '../helpers/tracing';

const tracingOf = (env: Record<string, string>) => loadConfig(env).tracing;
const refused = (env: Record<string, string>, variable: string) =>
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => err instanceof ConfigError && err.message.includes(variable),
    `${JSON.stringify(env)} is refused naming ${variable}`,
  );

afterEach(async () => {
  await activeTracing()?.shutdown();
});

describe('tracing settings: the standard OTEL_* variables', () => {
  test('off by default: no variable, no provider, no active span', () => {
    const config = tracingOf({});
    assert.equal(config.enabled, false);
    assert.deepEqual(config.exporters, []);
    assert.equal(startTracing(config), undefined);
    assert.equal(tracingOn(), false);
    assert.equal(currentTraceparent(), undefined);
  });

  test('on by an OTLP endpoint: the base endpoint gets /v1/traces, the traces endpoint is taken as given', () => {
    const base = tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    assert.equal(base.enabled, true);
    assert.deepEqual(base.exporters, ['otlp']);
    assert.equal(base.otlp.url, 'http://collector:4318/v1/traces');
    const own = tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/in' });
    assert.equal(own.otlp.url, 'https://traces.example/in');
    // An exporter named outright turns it on too, with the spec's default endpoint.
    const named = tracingOf({ OTEL_TRACES_EXPORTER: 'otlp' });
    assert.equal(named.enabled, true);
    assert.equal(named.otlp.url, 'http://localhost:4318/v1/traces');
    assert.deepEqual(tracingOf({ OTEL_TRACES_EXPORTER: 'console,otlp' }).exporters, ['console', 'otlp']);
  });

  test('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off whatever else is set', () => {
    assert.equal(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).enabled, false);
    assert.equal(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled, false);
    assert.equal(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }).enabled, true);
  });

  test('service name, resource attributes, headers (the traces variable wins per key), timeout and sampler', () => {
    const c = tracingOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=growth%20ops',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20one,x-tenant=a',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=b',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    assert.equal(c.serviceName, 'wakegate');
    assert.deepEqual(c.resourceAttributes, { 'deployment.environment': 'prod', team: 'growth ops' });
    assert.deepEqual(c.otlp.headers, { authorization: 'Bearer one', 'x-tenant': 'b' });
    assert.equal(c.otlp.timeoutMs, 2500);
    assert.deepEqual(c.sampler, { kind: 'parentbased_traceidratio', ratio: 0.25 });
    assert.equal(tracingOf({ OTEL_SERVICE_NAME: 'wakegate-eu' }).serviceName, 'wakegate-eu');
    assert.equal(tracingOf({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-resource' }).serviceName, 'from-resource');
  });

  test('a bad setting is refused naming the variable, never a header value', () => {
    refused({ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER');
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL');
    refused({ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED');
    refused({ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER');
    refused({ OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG');
    refused({ OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' }, 'OTEL_EXPORTER_OTLP_TIMEOUT');
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer s3cret,justatoken-s3cret' }),
      (err: unknown) => err instanceof ConfigError && /OTEL_EXPORTER_OTLP_HEADERS: entry 2/.test(err.message) && !err.message.includes('s3cret'),
    );
    // http/json is what the exporter sends; saying so is fine.
    assert.equal(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).enabled, true);
  });
});

describe('tracing in a process', () => {
  test('spans nest across awaits; untraced work records nothing; a failure marks its span; shutdown turns tracing off', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = startTracing(tracingOf({}), { exporter });
    assert.ok(tracing && tracingOn());
    assert.throws(() => startTracing(tracingOf({}), { exporter }), /already started/);
    let carried: string | undefined;
    await inSpan('outer', { root: true, attributes: { 'wakegate.event_key': 'e/1', 'wakegate.delivery_id': undefined } }, async (outer) => {
      await new Promise((r) => setTimeout(r, 5));
      await inSpan('inner', {}, async (inner) => {
        await Promise.resolve();
        carried = currentTraceparent();
        inner?.set({ 'wakegate.decision': 'started' });
      });
      // The supervisor's shared traffic: no span of it is recorded, in this trace or any other.
      await untraced(() =>
        inSpan('hidden', {}, async () => {
          assert.equal(currentTraceparent(), undefined);
        }),
      );
      outer?.set({ 'wakegate.decision': 'started' });
    });
    await assert.rejects(
      inSpan('failing', {}, async () => {
        throw new Error('no');
      }),
      /no/,
    );
    const spans = exporter.getFinishedSpans();
    const byName = (n: string) => spans.find((s) => s.name === n)!;
    const [outer, inner, failing] = [byName('outer'), byName('inner'), byName('failing')];
    assert.equal(inner.spanContext().traceId, outer.spanContext().traceId);
    assert.equal(inner.parentSpanId, outer.spanContext().spanId);
    assert.equal(carried, formatTraceparent(inner.spanContext()));
    assert.deepEqual(outer.attributes, { 'wakegate.event_key': 'e/1', 'wakegate.decision': 'started' });
    assert.equal(failing.status.code, 2);
    assert.equal(
      spans.find((s) => s.name === 'hidden'),
      undefined,
    );
    assert.notEqual(failing.spanContext().traceId, outer.spanContext().traceId);
    await tracing.shutdown();
    assert.equal(tracingOn(), false);
    assert.equal(activeTracing(), undefined);
  });

  test('traceparent: written and read as W3C version 00; junk and all-zero ids are none', () => {
    const p = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 };
    assert.equal(formatTraceparent(p), '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    assert.deepEqual(parseTraceparent(formatTraceparent(p)), p);
    for (const bad of [undefined, 42, '', 'junk', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`]) {
      assert.equal(parseTraceparent(bad), undefined, String(bad));
    }
  });

  test("a coalesced run's input: the opener's traceparent to join, the others' to link; keys as attributes", () => {
    const tp = (n: number) => `00-${String(n).padStart(32, 'a')}-${String(n).padStart(16, 'b')}-01`;
    const run = {
      runKey: 'campaign-reporter#c1@campaigns/report.due/c1/t2',
      agent: 'campaign-reporter',
      wakeKey: 'c1',
      eventKey: 'campaigns/report.due/c1/t2',
      source: 'campaigns',
      origin: {
        kind: 'batch',
        coalescerId: 'campaign-reporter#c1',
        absorbed: [
          { eventKey: 'campaigns/config.changed/c1/t1', traceparent: tp(1) },
          { eventKey: 'campaigns/report.due/c1/t2', traceparent: tp(2) },
          { eventKey: 'campaigns/config.changed/c1/t3' },
        ],
        absorbedOverflow: 4,
      },
    };
    const { opener, others } = batchTraceparents(run);
    assert.equal(opener && formatTraceparent(opener), tp(2));
    assert.deepEqual(others.map(formatTraceparent), [tp(1)]);
    assert.deepEqual(batchTraceparents({ origin: { kind: 'event' } }), { others: [] });
    assert.deepEqual(workflowAttributes('runWorkflow', run), {
      'wakegate.agent': 'campaign-reporter',
      'wakegate.wake_key': 'c1',
      'wakegate.run_key': run.runKey,
      'wakegate.event_key': run.eventKey,
      'wakegate.source': 'campaigns',
      'wakegate.origin': 'batch',
      'wakegate.coalescer_id': 'campaign-reporter#c1',
      'wakegate.absorbed': 7,
    });
    assert.deepEqual(workflowAttributes('coalescerWorkflow', { agent: 'a', wakeKey: 'k', policy: {} }), { 'wakegate.agent': 'a', 'wakegate.wake_key': 'k' });
  });

  test("an activity's keys: the tool, the effect's key and class and outcome, the model's tokens", () => {
    assert.deepEqual(activityInputAttributes('toolCall', { agent: 'a', tool: 'read_dashboard', runKey: 'r', wakeKey: 'k', args: {} }), {
      'wakegate.agent': 'a',
      'wakegate.tool': 'read_dashboard',
      'wakegate.run_key': 'r',
      'wakegate.wake_key': 'k',
    });
    const commit = {
      agent: 'a',
      effectKey: 'r#post@0',
      effect: { name: 'post', class: 'provider_key' },
      args: {},
      run: { runKey: 'r', wakeKey: 'k', eventKey: 'e' },
    };
    assert.equal(activityInputAttributes('commitEffect', commit)['wakegate.effect_class'], 'provider_key');
    assert.equal(activityInputAttributes('commitEffect', commit)['wakegate.effect_key'], 'r#post@0');
    assert.deepEqual(activityResultAttributes('commitEffect', { outcome: 'applied' }), { 'wakegate.outcome': 'applied' });
    assert.deepEqual(activityResultAttributes('modelTurn', { model: 'offline', usage: { inputTokens: 10, outputTokens: 3 }, toolCalls: [] }), {
      'gen_ai.response.model': 'offline',
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 3,
      'wakegate.model.tool_calls': 0,
    });
    assert.deepEqual(activityInputAttributes('observeRuns', { taskQueue: 'q' }), {});
  });
});
