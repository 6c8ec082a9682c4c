import type * as Api from '@opentelemetry/api';
import { formatTraceparent } from '../core/trace-context';

/**
 * Spans of wakegate's own (the webhook request, the queue message, the CLI emit, the gate), for the
 * code on the event's path. Nothing here loads OpenTelemetry: while tracing is off (no
 * `startTracing` in this process, src/tracing/provider.ts) every helper calls straight through, so the gate's hot path
 * pays one branch.
 */
interface Active {
  api: typeof Api;
  tracer: Api.Tracer;
  /** A context in which the SDK records nothing (the supervisor's traffic). */
  untraced: Api.Context;
}

/*
 * Kept on the process, not in this module: one process can hold two copies of it (the CLI is a
 * bundle, and the deployment module it loads brings the gate from source), and a span the gate
 * opens must see the tracing the CLI started. OpenTelemetry's API keeps its globals the same way.
 */
const ACTIVE = Symbol.for('wakegate.tracing.active');
const slot = globalThis as { [ACTIVE]?: Active };

/** Set by `startTracing` (src/tracing/provider.ts), cleared by its shutdown. */
export function setActiveTracer(a: Active | undefined): void {
  slot[ACTIVE] = a;
}

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** The part of a span the event's path writes to: its attributes and, on a failure it reports as an answer, its status. */
export interface WakeSpan {
  set(attributes: SpanAttributes): void;
  fail(message: string): void;
}

const defined = (a: SpanAttributes): Api.Attributes => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined)) as Api.Attributes;

/**
 * Run `fn` in a new active span named `name` (a child of the active one, or a new trace's root with
 * `root`), ended when `fn` settles; a throw marks it failed. Off: `fn(undefined)`.
 */
export async function inSpan<T>(
  name: string,
  opts: { kind?: 'internal' | 'server' | 'consumer'; root?: boolean; attributes?: SpanAttributes },
  fn: (span: WakeSpan | undefined) => Promise<T>,
): Promise<T> {
  const active = slot[ACTIVE];
  if (!active) return fn(undefined);
  const { api, tracer } = active;
  const kind = opts.kind === 'server' ? api.SpanKind.SERVER : opts.kind === 'consumer' ? api.SpanKind.CONSUMER : api.SpanKind.INTERNAL;
  return tracer.startActiveSpan(name, { kind, root: opts.root, attributes: defined(opts.attributes ?? {}) }, async (span) => {
    const handle: WakeSpan = {
      set: (a) => span.setAttributes(defined(a)),
      fail: (message) => span.setStatus({ code: api.SpanStatusCode.ERROR, message }),
    };
    try {
      return await fn(handle);
    } catch (err) {
      span.recordException(err as Error);
      handle.fail((err as Error)?.message ?? String(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The active span as a W3C `traceparent` (what an event carries to its coalescer), or undefined when none is recording. */
export function currentTraceparent(): string | undefined {
  const active = slot[ACTIVE];
  if (!active) return undefined;
  const ctx = active.api.trace.getActiveSpan()?.spanContext();
  return ctx && active.api.isSpanContextValid(ctx) ? formatTraceparent(ctx) : undefined;
}

/** The active context, to run later work in it ({@link inContext}); undefined while tracing is off. */
export function captureContext(): unknown {
  return slot[ACTIVE]?.api.context.active();
}

/** Run `fn` in a context {@link captureContext} returned (as is, without one). */
export function inContext<T>(ctx: unknown, fn: () => T): T {
  const active = slot[ACTIVE];
  return active && ctx ? active.api.context.with(ctx as Api.Context, fn) : fn();
}

/**
 * Run `fn` where nothing is traced: background work of the process that belongs to no wake (the
 * supervisor's reads, counts and permits, shared across wakes), whose spans would otherwise land in
 * whichever wake's trace happened to start the call.
 */
export function untraced<T>(fn: () => T): T {
  const active = slot[ACTIVE];
  return active ? active.api.context.with(active.untraced, fn) : fn();
}
