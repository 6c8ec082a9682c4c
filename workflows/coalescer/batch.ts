import type { CoalescerIdentity, OfferedEvent } from '../../src/core/coalesce-batch';
import type { Batch, CoalescerState } from '../../src/core/coalesce-types';
import { coalescerId } from '../../src/core/ids';
import type { AbsorbedEvent, RunInput } from '../../src/core/run-types';

/*
 * What the coalescer machine (machine.ts) works with, pure: the steps it hands its workflow, its
 * first state, and the run's input a batch becomes. How a batch opens, fills and is answered, and
 * the first decision the gate answers a start with, are in src/core/coalesce-batch.ts.
 */

/**
 * What the coalescer's workflow does next. The machine has already applied it to its state (a
 * started batch is the live run, a handed-out signal is no longer owed); the shell only performs it.
 * - `supersede`: tell the live run `runKey` who restarts it (`by`), then cancel it (overlap `cancel`).
 * - `record-skipped`: tell the run `runKey` of the events skipped while it ran, in one signal, then
 *   report to the machine's `skipsRecorded` whether it was delivered (a closed run refuses it).
 * - `steer`: send the live run the events steered into it since the last steer, in one update (`id`
 *   its update ID), without waiting for it: its answer goes back to the machine's `steerAnswered`
 *   (or `steerFailed`); whatever the answer, the run's end (`runEnded`) says which its model saw.
 * - `start`: start `batch` as a run (its input: {@link runInputOf}).
 * - `continue-as-new`: Temporal suggested it; carry `state` over.
 * - `close`: idle for `idleCloseMs` and every event past the dedup horizon; close once no handler is
 *   running, unless an offer arrived meanwhile.
 * - `wait`: until something arrives, or until `untilMs` (a batch's due time, or the idle close).
 */
export type NextAction =
  | { kind: 'supersede'; runKey: string; by: string }
  | { kind: 'record-skipped'; runKey: string; events: AbsorbedEvent[] }
  | { kind: 'steer'; runKey: string; id: string; events: OfferedEvent[] }
  | { kind: 'start'; batch: Batch }
  | { kind: 'continue-as-new' }
  | { kind: 'close' }
  | { kind: 'wait'; untilMs?: number };

/** A coalescer's state before its first offer; `chain` names its chain of executions (see CoalescerState). */
export function initialState(nowMs: number, chain = '0'): CoalescerState {
  return {
    chain,
    batches: 0,
    newestVersion: {},
    recent: [],
    seen: [],
    lastActivityMs: nowMs,
    counts: { offered: 0, started: 0, coalesced: 0, skipped: 0, stale: 0, runs: 0 },
    runs: [],
    staleEvents: [],
  };
}

/** An event as a run's record keeps it: without payload, fingerprint, bucket and trace context. */
export function record(e: OfferedEvent): AbsorbedEvent {
  const { payload: _p, fingerprint: _f, bucketStart: _b, traceparent: _t, ...rest } = e;
  return rest;
}

/**
 * The run's input for a batch: the opening event (the run's ID is built from it) with every event the
 * batch holds. The one place that shapes a coalesced run's input.
 */
export function runInputOf(self: Pick<CoalescerIdentity, 'agent' | 'wakeKey'>, b: Batch): RunInput {
  const opener = b.events.find((e) => e.eventKey === b.openedBy) ?? b.events[b.events.length - 1]!;
  return {
    runKey: b.runKey,
    agent: self.agent,
    wakeKey: self.wakeKey,
    eventKey: opener.eventKey,
    source: opener.source,
    entity: opener.entity,
    type: opener.type,
    occurredAt: opener.occurredAt,
    bucketStart: opener.bucketStart,
    payload: opener.payload,
    fingerprint: opener.fingerprint,
    ...(opener.deliveryIds[0] ? { deliveryId: opener.deliveryIds[0] } : {}),
    origin: {
      kind: 'batch',
      coalescerId: coalescerId(self.agent, self.wakeKey),
      absorbed: b.events,
      ...(b.overflow ? { absorbedOverflow: b.overflow } : {}),
      ...(b.supersedes ? { supersedes: b.supersedes } : {}),
    },
  };
}

/**
 * Skips are told to the live run at most this often, each record carrying every skip since the last.
 * A skip's answer waits for its record (skips.ts), so this bounds that wait; under a storm a signal
 * per loop turn (every 10 to 20 ms) cost two history events per offer.
 */
export const SKIPPED_SIGNAL_EVERY_MS = 250;
