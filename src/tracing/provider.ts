import type * as Api from '@opentelemetry/api';
import type { IResource } from '@opentelemetry/resources';
import type { Sampler, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { TracingConfig } from '../config/tracing';
import { setActiveTracer } from './spans';
import type * as ApiModule from '@opentelemetry/api';
import type * as CoreModule from '@opentelemetry/core';
import type * as SdkModule from '@opentelemetry/sdk-trace-base';
import type * as ResourcesModule from '@opentelemetry/resources';
import type * as OtlpModule from '@opentelemetry/exporter-trace-otlp-http';
import type * as ClientInterceptorModule from '@temporalio/interceptors-opentelemetry/lib/client';
import type * as WorkerInterceptorModule from '@temporalio/interceptors-opentelemetry/lib/worker';
import type * as ContextManagerModule from '@opentelemetry/context-async-hooks';
import type * as ActivityModule from './activity';
import type * as ConsoleModule from './console-exporter';

/*
 * OpenTelemetry is loaded only when tracing starts: a process with tracing off (the default) never
 * loads the SDK, and the CLI's start-up does not pay for it.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const lazy = {
  api: () => require('@opentelemetry/api') as typeof ApiModule,
  core: () => require('@opentelemetry/core') as typeof CoreModule,
  sdk: () => require('@opentelemetry/sdk-trace-base') as typeof SdkModule,
  resources: () => require('@opentelemetry/resources') as typeof ResourcesModule,
  otlp: () => require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpModule,
  client: () => require('@temporalio/interceptors-opentelemetry/lib/client') as typeof ClientInterceptorModule,
  worker: () => require('@temporalio/interceptors-opentelemetry/lib/worker') as typeof WorkerInterceptorModule,
  contextManager: () => require('@opentelemetry/context-async-hooks') as typeof ContextManagerModule,
  activity: () => require('./activity') as typeof ActivityModule,
  console: () => require('./console-exporter') as typeof ConsoleModule,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** Workflows whose spans are not recorded: the supervisor and the rollouts are off every wake's path, and their own traces would never end. */
const UNTRACED_WORKFLOWS = new Set(['supervisorWorkflow', 'rolloutWorkflow']);

/** A test's hooks into {@link startTracing}. */
export interface TracingHooks {
  /**
   * Receives every span as it ends, instead of the configured exporters, and turns tracing on
   * whatever the configuration says (a test's `InMemorySpanExporter`).
   */
  exporter?: SpanExporter;
}

/** Tracing in this process: what clients and workers add, and how to flush it. */
export interface Tracing {
  readonly config: TracingConfig;
  readonly tracer: Api.Tracer;
  /** A Temporal client's interceptors (`new Client({ interceptors })`): a start, update, signal or query carries the trace in Temporal headers. */
  readonly clientInterceptors: ClientInterceptors;
  /** What a worker adds: activity interceptors, its activities' client's interceptors, and the sink that exports workflow spans. */
  workerOptions(): { interceptors: Pick<WorkerInterceptors, 'activity' | 'client'>; sinks: InjectedSinks<OpenTelemetrySinks> };
  /** Export every span ended so far. */
  forceFlush(): Promise<void>;
  /** Flush, stop exporting and unregister: tracing is off in this process again. */
  shutdown(): Promise<void>;
}

/** On the process, like the active tracer (src/tracing/spans.ts): a bundled copy of this module and one from source share it. */
const CURRENT = Symbol.for('wakegate.tracing.current');
const slot = globalThis as { [CURRENT]?: Tracing };

/** This process's tracing, if it was started. */
export function activeTracing(): Tracing | undefined {
  return slot[CURRENT];
}

/** Start tracing once per process if the configuration asks for it; the running one otherwise. */
export function ensureTracing(config: TracingConfig): Tracing | undefined {
  return slot[CURRENT] ?? startTracing(config);
}

function samplerOf(sdk: typeof SdkModule, s: TracingConfig['sampler']): Sampler {
  const ratio = new sdk.TraceIdRatioBasedSampler(s.ratio);
  switch (s.kind) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: ratio });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

function processorsOf(config: TracingConfig, hooks: TracingHooks): SpanProcessor[] {
  const sdk = lazy.sdk();
  if (hooks.exporter) return [new sdk.SimpleSpanProcessor(hooks.exporter)];
  return config.exporters.map(
    (kind) =>
      new sdk.BatchSpanProcessor(
        kind === 'console'
          ? new (lazy.console().StderrSpanExporter)()
          : new (lazy.otlp().OTLPTraceExporter)({ url: config.otlp.url, headers: config.otlp.headers, timeoutMillis: config.otlp.timeoutMs }),
      ),
  );
}

/**
 * Start tracing in this process, when `config` asks for it (or a test's `hooks.exporter` is given):
 * a tracer provider with the configured exporters and sampler, registered as OpenTelemetry's global
 * with a context manager that follows async work and the W3C trace-context propagator. Returns
 * undefined, and loads nothing, when tracing is off. Throws if tracing already runs here.
 */
export function startTracing(config: TracingConfig, hooks: TracingHooks = {}): Tracing | undefined {
  if (!config.enabled && !hooks.exporter) return undefined;
  if (slot[CURRENT]) throw new Error('tracing is already started in this process: start it once, at start-up');
  const api = lazy.api();
  const core = lazy.core();
  const sdk = lazy.sdk();
  const { Resource } = lazy.resources();
  const resource: IResource = Resource.default().merge(new Resource({ ...config.resourceAttributes, 'service.name': config.serviceName }));
  const provider = new sdk.BasicTracerProvider({ resource, sampler: samplerOf(sdk, config.sampler), spanProcessors: processorsOf(config, hooks) });
  provider.register({ contextManager: new (lazy.contextManager().AsyncLocalStorageContextManager)(), propagator: new core.W3CTraceContextPropagator() });
  const tracer = provider.getTracer('wakegate');
  const temporalTracer = provider.getTracer('@temporalio/interceptors-opentelemetry');
  setActiveTracer({ api, tracer, untraced: core.suppressTracing(api.ROOT_CONTEXT) });

  const { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } = lazy.worker();
  const { WakeActivityInterceptor } = lazy.activity();
  const traced = (type: string | undefined) => !type || !UNTRACED_WORKFLOWS.has(type);
  const activity: ActivityInterceptorsFactory[] = [
    (ctx) =>
      traced(ctx.info.workflowType)
        ? { inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: temporalTracer }), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) }
        : {},
    (ctx) => (traced(ctx.info.workflowType) ? { inbound: new WakeActivityInterceptor(ctx, api) } : {}),
  ];
  const clientInterceptors: ClientInterceptors = { workflow: [new (lazy.client().OpenTelemetryWorkflowClientInterceptor)({ tracer: temporalTracer })] };
  const workflowSpans = makeWorkflowExporter(provider.activeSpanProcessor, resource);

  const tracing: Tracing = {
    config,
    tracer,
    clientInterceptors,
    workerOptions: () => ({
      interceptors: { activity, client: clientInterceptors },
      sinks: {
        exporter: {
          export: {
            // The sink would copy the whole workflow info (memo, search attributes, last failure) onto
            // every span; a span needs only which workflow it belongs to.
            fn: (info, spans) =>
              workflowSpans.export.fn(
                {
                  workflowId: info.workflowId,
                  runId: info.runId,
                  workflowType: info.workflowType,
                  taskQueue: info.taskQueue,
                  namespace: info.namespace,
                } as typeof info,
                spans,
              ),
          },
        },
      },
    }),
    forceFlush: () => provider.forceFlush(),
    shutdown: async () => {
      if (slot[CURRENT] !== tracing) return;
      slot[CURRENT] = undefined;
      setActiveTracer(undefined);
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
  slot[CURRENT] = tracing;
  return tracing;
}
