/**
 * The plain side of tracing, shared by the gate, the worker and the workflow interceptors: the span
 * attribute names wakegate sets, and the W3C `traceparent` an event carries to the coalescer so that
 * the run it opens joins its trace. No OpenTelemetry here: workflow code and process code both read it.
 */

/** Span attributes with wakegate's keys (docs/OPERATIONS.md, "Tracing"). */
export const WakeAttr = {
  source: 'wakegate.source',
  eventType: 'wakegate.event_type',
  entity: 'wakegate.entity',
  eventKey: 'wakegate.event_key',
  deliveryId: 'wakegate.delivery_id',
  agent: 'wakegate.agent',
  agentVersion: 'wakegate.agent_version',
  wakeKey: 'wakegate.wake_key',
  runKey: 'wakegate.run_key',
  decision: 'wakegate.decision',
  coalescerId: 'wakegate.coalescer_id',
  origin: 'wakegate.origin',
  absorbed: 'wakegate.absorbed',
  terminalReason: 'wakegate.terminal_reason',
  tool: 'wakegate.tool',
  effect: 'wakegate.effect',
  effectKey: 'wakegate.effect_key',
  effectClass: 'wakegate.effect_class',
  outcome: 'wakegate.outcome',
  attempt: 'wakegate.attempt',
  scheduleId: 'wakegate.schedule_id',
} as const;

/** A span's identity as a `traceparent` carries it. */
export interface TraceParent {
  traceId: string;
  spanId: string;
  /** W3C trace flags (bit 0: sampled). */
  traceFlags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** `00-<trace id>-<span id>-<flags>`, the W3C Trace Context header's version 00. */
export function formatTraceparent(p: TraceParent): string {
  return `00-${p.traceId}-${p.spanId}-${(p.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The span a `traceparent` names, or undefined for anything that is not a valid version-00 header (all-zero ids included). */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value);
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) };
}

type Attrs = Record<string, string | number>;
const str = (v: unknown): v is string => typeof v === 'string' && v !== '';
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

/** Set `key` when `value` is a non-empty string. */
function put(out: Attrs, key: string, value: unknown): void {
  if (str(value)) out[key] = value;
}

/**
 * A workflow's wakegate attributes, read from its first argument: a run's or subagent's keys and
 * origin, a coalescer's agent and wake key. Anything it does not know
 * gives none (the interceptors never fail a workflow over an attribute).
 */
export function workflowAttributes(_workflowType: string, arg: unknown): Attrs {
  const a = obj(arg);
  const out: Attrs = {};
  put(out, WakeAttr.agent, a.agent);
  put(out, WakeAttr.wakeKey, a.wakeKey);
  put(out, WakeAttr.runKey, a.runKey);
  put(out, WakeAttr.eventKey, a.eventKey);
  put(out, WakeAttr.source, a.source);
  put(out, WakeAttr.eventType, a.type);
  put(out, WakeAttr.entity, a.entity);
  put(out, WakeAttr.deliveryId, a.deliveryId);
  if (a.scheduled) {
    out[WakeAttr.origin] = 'window';
    put(out, WakeAttr.scheduleId, obj(a.scheduled).scheduleId);
  }
  const origin = obj(a.origin);
  put(out, WakeAttr.origin, origin.kind);
  put(out, WakeAttr.coalescerId, origin.coalescerId);
  if (Array.isArray(origin.absorbed))
    out[WakeAttr.absorbed] = origin.absorbed.length + (typeof origin.absorbedOverflow === 'number' ? origin.absorbedOverflow : 0);
  return out;
}

/**
 * A coalesced run's events as `traceparent`s: the opening event's first (the run joins its trace),
 * then every other absorbed event's (the run links to them). Empty for any other input.
 */
export function batchTraceparents(arg: unknown): { opener?: TraceParent; others: TraceParent[] } {
  const a = obj(arg);
  const origin = obj(a.origin);
  if (origin.kind !== 'batch' || !Array.isArray(origin.absorbed)) return { others: [] };
  let opener: TraceParent | undefined;
  const others: TraceParent[] = [];
  for (const e of origin.absorbed as unknown[]) {
    const event = obj(e);
    const parent = parseTraceparent(event.traceparent);
    if (!parent) continue;
    if (event.eventKey === a.eventKey && !opener) opener = parent;
    else others.push(parent);
  }
  return { opener, others };
}
