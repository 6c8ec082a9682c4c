import { setHandler, type CancellationScope } from '@temporalio/workflow';
import {
  approveSignal,
  deliverySignal,
  killUpdate,
  rejectSignal,
  reportEndSignal,
  skippedSignal,
  statusQuery,
  steerUpdate,
  supersedeSignal,
} from '../../src/core/messages';
import { addDeliveries, deliveriesOf, keepDeliveryId, RUN_DELIVERY_IDS_KEPT } from '../../src/core/delivery-ids';
import type { ApprovalRuling } from '../../src/core/run-types';
import { NOT_YET_WORKING } from './hold';
import type { RunRecord } from './record';

/** Events listed on a run's result and status (the rest are counted). */
const MAX_SKIPPED_LISTED = 1000;

/**
 * The run's messages, which change its record (record.ts): what it hears of its events (delivery,
 * skipped, steer) and what operators and its coalescer ask of it (supersede, status, kill, approve,
 * reject). A kill cancels `scope`; a halt before the run's work holds it instead.
 */
export function listen(record: RunRecord, scope: CancellationScope): void {
  listenToEvents(record);
  listenToOperators(record, scope);
}

/**
 * Redeliveries, events the coalescer skipped, and events steered into the live run. Delivery ids are
 * kept within their bound (src/core/delivery-ids.ts): every delivery counted, the first ids and the newest kept.
 */
function listenToEvents(record: RunRecord): void {
  setHandler(deliverySignal, (notice) => {
    const mine = notice.eventKey ? record.absorbed.find((e) => e.eventKey === notice.eventKey) : undefined;
    if (mine) addDeliveries(mine, notice.deliveryIds);
    for (const id of notice.deliveryIds) {
      record.deliveryCount += 1;
      keepDeliveryId(record.deliveryIds, id, RUN_DELIVERY_IDS_KEPT);
    }
    record.indexDirty = true;
  });
  setHandler(skippedSignal, ({ events }) => {
    // The payloads stay in the signal, in history, for a replay; the run's record and result keep none.
    for (const { payload: _p, ...e } of events) {
      if (record.skipped.length < MAX_SKIPPED_LISTED) record.skipped.push(e);
      else record.skippedOverflow += 1;
    }
  });
  setHandler(
    steerUpdate,
    ({ events }) => {
      const keys = events.map((e) => e.eventKey);
      // A one-call run has no coalescer; a finished one (or one past its commit decision) takes no more.
      const fresh = record.batch && !record.done ? record.steer.take(events, (k) => record.absorbed.some((e) => e.eventKey === k)) : undefined;
      if (!fresh) return { accepted: [], refused: keys };
      for (const { payload: _p, ...e } of fresh) {
        record.absorbed.push({ ...e, deliveryIds: [...e.deliveryIds] });
        record.deliveryCount += deliveriesOf(e);
        for (const id of e.deliveryIds) keepDeliveryId(record.deliveryIds, id, RUN_DELIVERY_IDS_KEPT);
      }
      record.indexDirty = true;
      return { accepted: keys, refused: [] };
    },
    {
      validator: (arg: { events?: { eventKey?: string }[] }) => {
        if (!Array.isArray(arg?.events) || arg.events.some((e) => !e?.eventKey)) throw new Error('steer needs events, each with an eventKey');
      },
    },
  );
}

/** Supersede, status, kill, approve and reject. */
function listenToOperators(record: RunRecord, scope: CancellationScope): void {
  const { input, state } = record;
  // Overlap `cancel`: the coalescer restarts on the newest state. A run that has begun its commit
  // stage is let finish (its effects are not redone under the restart's effect keys): its end says
  // so, and the restart drops the events it carried.
  setHandler(supersedeSignal, ({ by }) => {
    if (record.done || state.commitBegan) return;
    record.supersededBy = by;
    scope.cancel();
  });
  // Its coalescer is about to continue as new (or a new chain adopted it): report the end to its ID.
  // Already known (the run is in its last steps), the handler reports it; else the run's end does (record.ts).
  setHandler(reportEndSignal, async ({ coalescerId }) => {
    if (!record.batch || !coalescerId) return;
    record.reportEndTo = coalescerId;
    await record.reportEnd();
  });
  setHandler(statusQuery, () => ({
    runKey: input.runKey,
    eventKey: input.eventKey,
    agent: input.agent,
    wakeKey: input.wakeKey,
    absorbed: record.absorbed,
    skipped: record.skipped,
    ...(record.steer.taken.length ? { steered: record.steer.taken } : {}),
    phase: state.phase,
    deliveryIds: record.deliveryIds,
    deliveryCount: record.deliveryCount,
    usage: record.usage(),
    awaitingApproval: state.approval.pending,
    ...(record.held.record ? { held: record.held.record } : {}),
  }));
  setHandler(
    killUpdate,
    (req) => {
      if (req.halt && NOT_YET_WORKING.has(state.phase)) {
        record.haltedBeforeWork = req;
        return { accepted: true, phase: state.phase, held: true };
      }
      record.killedBy = req;
      scope.cancel();
      return { accepted: true, phase: state.phase };
    },
    {
      validator: (req) => {
        if (record.done) throw new Error('the run has already finished');
        if (!req?.who || !req?.reason) throw new Error('kill needs who and reason');
        // A rollout stopping its candidate's runs: a run on another version (or on none yet: it will
        // start on the version the rollout gives now) is passed by, with nothing written.
        if (req.version !== undefined && req.version !== record.agentVersion)
          throw new Error(
            record.agentVersion ? `the run is on version ${record.agentVersion}, not ${req.version}` : `the run has no version yet, so not ${req.version}`,
          );
      },
    },
  );
  // The first decision wins; one for another effect key than the waiting one is ignored. It may
  // arrive before the wait begins (same workflow task): the commit stage keeps it.
  const decide = (approved: boolean) => (d: ApprovalRuling) => {
    if (record.done || state.approval.decision || !d?.who) return;
    const pending = state.approval.pending;
    if (pending && d.effectKey && d.effectKey !== pending.effectKey) return;
    state.approval.decision = { approved, who: d.who, reason: d.reason };
  };
  setHandler(approveSignal, decide(true));
  setHandler(rejectSignal, decide(false));
}
