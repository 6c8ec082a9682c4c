import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * The payload size at which the SDK warns (TMPRL1103): 512 KiB. Temporal refuses one over 2 MB.
 */
export const PAYLOAD_WARN_BYTES = 512 * 1024;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads;

/**
 * The payloads a coalescer sends, by what carries them in its history: its continue-as-new input, a
 * run's start input, a signal to a run, an activity's input, an update's result, its own result. Its
 * start input is counted too (a chain's first input, or the gate's start with its first offer). What
 * others send it (offers, a run's end) is not counted: not the coalescer's state.
 */
const SENT: Record<string, (e: HistoryEvent) => Payloads | null | undefined> = {
  started: (e) => e.workflowExecutionStartedEventAttributes?.input,
  continueAsNew: (e) => e.workflowExecutionContinuedAsNewEventAttributes?.input,
  childStart: (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.input,
  signalToRun: (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.input,
  activity: (e) => e.activityTaskScheduledEventAttributes?.input,
  updateResult: (e) => e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success,
  result: (e) => e.workflowExecutionCompletedEventAttributes?.result,
};

/** Bytes of one command's payloads on the wire (the Payloads message: every argument, data and metadata). */
const bytesOf = (p: Payloads) => temporal.api.common.v1.Payloads.encode(p).finish().length;

/**
 * Every payload the coalescer `coalescerId` sent, read from the histories of all its executions: per
 * kind, how many and the largest (bytes); the largest of all; how many were over the SDK's warning
 * (PAYLOAD_WARN_BYTES); and, of the largest continue-as-new input, the JSON characters of each part
 * of its state (where the bytes are).
 */
export async function coalescerPayloads(client: Client, coalescerId: string) {
  const byKind: Record<string, { count: number; largestBytes: number }> = {};
  let largest = { bytes: 0, kind: '' };
  let overWarning = 0;
  let largestContinueAsNew: Payloads | undefined;
  let executions = 0;
  /** The longest history of its executions: a continue-as-new held for a batch to start lets one grow longer. */
  let longestHistory = { events: 0, bytes: 0 };
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${coalescerId}"` })) {
    executions += 1;
    if (wf.historyLength > longestHistory.events) longestHistory = { events: wf.historyLength, bytes: wf.historySize ?? 0 };
    for (const e of (await client.workflow.getHandle(coalescerId, wf.runId).fetchHistory()).events ?? []) {
      for (const [kind, of] of Object.entries(SENT)) {
        const payloads = of(e);
        if (!payloads?.payloads?.length) continue;
        const bytes = bytesOf(payloads);
        const k = (byKind[kind] ??= { count: 0, largestBytes: 0 });
        k.count += 1;
        if (bytes > k.largestBytes) {
          k.largestBytes = bytes;
          if (kind === 'continueAsNew') largestContinueAsNew = payloads;
        }
        if (bytes > largest.bytes) largest = { bytes, kind };
        if (bytes > PAYLOAD_WARN_BYTES) overWarning += 1;
      }
    }
  }
  return {
    executions,
    longestHistory,
    largestBytes: largest.bytes,
    largestKind: largest.kind,
    warnAtBytes: PAYLOAD_WARN_BYTES,
    /** Payloads over the SDK's warning size, each one a TMPRL1103 warning. */
    overWarning,
    byKind,
    largestContinueAsNewChars: largestContinueAsNew ? stateParts(largestContinueAsNew) : undefined,
  };
}

/** JSON characters of each part of a continue-as-new input's state, largest first. */
function stateParts(p: Payloads): Record<string, number> {
  const input = defaultPayloadConverter.fromPayload(p.payloads![0]! as Parameters<typeof defaultPayloadConverter.fromPayload>[0]) as {
    state?: Record<string, unknown>;
  };
  const parts = Object.entries(input.state ?? {}).map(([k, v]) => [k, JSON.stringify(v ?? null).length] as const);
  return Object.fromEntries([['input', JSON.stringify(input).length] as const, ...parts.sort((a, b) => b[1] - a[1])]);
}
