import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { deliverySignal, statusQuery } from './messages';
import {
  MAX_DELIVERY_IDS_INDEXED,
  WakeAgent,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeEntity,
  WakeEventKey,
  WakeEventType,
  WakeOccurredAt,
  WakeSource,
  WakeTerminalReason,
} from './search-attributes';
import type { TerminalReason, WakeInput, WakeResult } from './types';
import { runCanary } from './agents/canary';

/**
 * One wake: the run for one logical event. Its workflow ID is the event key, so Temporal keeps at
 * most one open run per key and the gate answers duplicates from it.
 *
 * Records every delivery id it sees (search attributes WakeDeliveryIds, WakeDeliveryCount), runs the
 * agent named in the input, and ends with a terminal reason (search attribute WakeTerminalReason and
 * the result). A cancelled run ends `cancelled` and completes, so a later redelivery is answered
 * with that stored outcome rather than started again.
 */
export async function wakeWorkflow(input: WakeInput): Promise<WakeResult> {
  const deliveryIds: string[] = input.deliveryId ? [input.deliveryId] : [];
  let deliveryCount = 1;
  let phase = 'starting';
  let indexDirty = false;

  const seen = new Set(deliveryIds);
  setHandler(deliverySignal, (notice) => {
    for (const id of notice.deliveryIds) {
      deliveryCount += 1;
      if (!seen.has(id)) {
        seen.add(id);
        deliveryIds.push(id);
      }
    }
    indexDirty = true;
  });
  setHandler(statusQuery, () => ({ eventKey: input.eventKey, agent: input.agent, phase, deliveryIds, deliveryCount }));

  // The gate's start carries no search attributes (each one makes the start write heavier); the run
  // indexes itself here, in its first workflow task, as soon as a worker picks it up.
  upsertSearchAttributes([
    { key: WakeEventKey, value: input.eventKey },
    { key: WakeSource, value: input.source },
    { key: WakeEntity, value: input.entity },
    { key: WakeEventType, value: input.type },
    { key: WakeAgent, value: input.agent },
    { key: WakeOccurredAt, value: new Date(input.occurredAt) },
    { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
    { key: WakeDeliveryCount, value: deliveryCount },
  ]);

  // A burst of duplicate deliveries arrives as many signals in one activation; index them once.
  // Non-cancellable: a cancelled run still records the deliveries that reach it.
  const flushIndex = async (): Promise<void> => {
    for (;;) {
      await condition(() => indexDirty);
      indexDirty = false;
      upsertSearchAttributes([
        { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
        { key: WakeDeliveryCount, value: deliveryCount },
      ]);
    }
  };
  void CancellationScope.nonCancellable(flushIndex);

  const finish = (terminalReason: TerminalReason, summary: string, output?: unknown): WakeResult => {
    phase = 'done';
    upsertSearchAttributes([
      { key: WakeTerminalReason, value: terminalReason },
      { key: WakeDeliveryIds, value: deliveryIds.slice(0, MAX_DELIVERY_IDS_INDEXED) },
      { key: WakeDeliveryCount, value: deliveryCount },
    ]);
    log.info('wake finished', { eventKey: input.eventKey, terminalReason, deliveryIds, deliveryCount });
    return { eventKey: input.eventKey, agent: input.agent, terminalReason, summary, deliveryIds, deliveryCount, output };
  };

  try {
    switch (input.agent) {
      case 'canary': {
        const output = await runCanary(input, (p) => (phase = p));
        return finish('success', `canary recorded ${input.eventKey}${output.heldMs ? ` and held ${output.heldMs} ms` : ''}`, output);
      }
      default:
        throw ApplicationFailure.nonRetryable(`no agent named "${input.agent}" is registered in this worker`, 'UnknownAgent');
    }
  } catch (err) {
    if (isCancellation(err)) {
      return CancellationScope.nonCancellable(async () => finish('cancelled', 'the run was cancelled before it finished'));
    }
    throw err;
  }
}
