/*
 * Not a workflow: the workflow interceptors a worker with tracing on bundles
 * (`bundleWorkflowCode({ workflowInterceptorModules })`, src/tracing/provider.ts). They wrap
 * OpenTelemetry's own workflow interceptors (spans for the workflow, its activities, children,
 * signals and updates) and add wakegate's part:
 * - wakegate's keys on the workflow's span (`RunWorkflow:<type>`), and the run's terminal reason;
 * - a coalesced run joins the trace of the event that opened its batch (the coalescer starts it in
 *   that event's span context, carried as `traceparent` on the event) and links to the traces of
 *   the other events it absorbed;
 * - a workflow that outlives a wake (a coalescer, a schedule's ledger, a fixed-delay loop) is the
 *   root of a trace of its own per Temporal run, linked to whoever started it, so no wake's trace
 *   stays open for as long as the entity lives; a fixed-delay loop's window starts a trace of its own;
 * - the supervisor is not traced (off every wake's path).
 * Spans change no command: a history recorded with tracing on replays without it, and the reverse.
 */
import * as otel from '@opentelemetry/api';
import { defaultPayloadConverter } from '@temporalio/common';
import type {
  ActivityInput,
  Next,
  StartChildWorkflowExecutionInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { workflowInfo } from '@temporalio/workflow';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { batchTraceparents, parseTraceparent, WakeAttr, workflowAttributes, type TraceParent } from '../src/core/trace-context';

const UNTRACED = new Set(['supervisorWorkflow', 'rolloutWorkflow']);
const OWN_TRACE = new Set(['coalescerWorkflow', 'scheduleLedgerWorkflow', 'fixedDelayWorkflow']);

const spanContext = (p: TraceParent): otel.SpanContext => ({ ...p, isRemote: true });

/** Shared by one workflow's interceptors: who started an entity workflow, to link its own trace to. */
interface Starter {
  link?: otel.Link;
}

/** Outermost for an entity workflow: its span becomes a root (the starter's context is kept for a link). */
class OwnTrace implements WorkflowInboundCallsInterceptor {
  constructor(private readonly starter: Starter) {}

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const { [TRACE_HEADER]: header, ...headers } = input.headers;
    if (!header) return next(input);
    const carrier = defaultPayloadConverter.fromPayload<Record<string, string>>(header);
    const parent = parseTraceparent(carrier?.traceparent);
    if (parent) this.starter.link = { context: spanContext(parent), attributes: { 'wakegate.link': 'started_by' } };
    return next({ ...input, headers });
  }
}

/** Inside OpenTelemetry's inbound interceptor: the workflow's span is active here. */
class WakeAttributes implements WorkflowInboundCallsInterceptor {
  constructor(
    private readonly type: string,
    private readonly starter: Starter,
  ) {}

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const span = otel.trace.getActiveSpan();
    if (!span) return next(input);
    const arg = input.args[0];
    span.setAttributes(workflowAttributes(this.type, arg));
    if (this.starter.link) span.addLink(this.starter.link);
    for (const other of batchTraceparents(arg).others) span.addLink({ context: spanContext(other), attributes: { 'wakegate.link': 'absorbed' } });
    const result = await next(input);
    const reason = (result as { terminalReason?: unknown } | undefined)?.terminalReason;
    if (typeof reason === 'string') span.setAttribute(WakeAttr.terminalReason, reason);
    const version = (result as { agentVersion?: unknown } | undefined)?.agentVersion;
    if (typeof version === 'string') span.setAttribute(WakeAttr.agentVersion, version);
    return result;
  }
}

/** Outside OpenTelemetry's outbound interceptor: chooses the context its spans (and the headers it writes) are made in. */
class WakeContext implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly type: string) {}

  async startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    const opener = input.workflowType === 'runWorkflow' ? batchTraceparents(input.options.args?.[0]).opener : undefined;
    if (!opener) return next(input);
    return otel.context.with(otel.trace.setSpanContext(otel.ROOT_CONTEXT, spanContext(opener)), () => next(input));
  }

  async scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
    // Each window of a fixed-delay loop is a wake of its own: its trace starts here, not in the loop's.
    if (this.type === 'fixedDelayWorkflow' && input.activityType === 'runScheduledWindow') return otel.context.with(otel.ROOT_CONTEXT, () => next(input));
    return next(input);
  }
}

/** The interceptors of one workflow, by its type. */
export const interceptors = (): WorkflowInterceptors => {
  const type = workflowInfo().workflowType;
  if (UNTRACED.has(type)) return {};
  const starter: Starter = {};
  return {
    inbound: [...(OWN_TRACE.has(type) ? [new OwnTrace(starter)] : []), new OpenTelemetryInboundInterceptor(), new WakeAttributes(type, starter)],
    outbound: [new WakeContext(type), new OpenTelemetryOutboundInterceptor()],
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
