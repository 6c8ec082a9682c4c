import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { Batch, CoalescerInput, CoalescerState } from '../../core/coalesce-types';
import {
  coalescerQuery,
  deliverySignal,
  eventQuery,
  forgetUpdate,
  offerSignal,
  offerUpdate,
  runEndedSignal,
  skippedSignal,
  supersedeSignal,
} from '../../core/messages';
import type { TerminalReason, RunResult } from '../../core/types';
import type { CoalesceActivities } from '../../core/contracts';
import type { runWorkflow } from '../run/workflow';
import { CoalescerMachine, initialState, runInputOf } from './machine';
import { ENTITY_HISTORY_EVENTS } from '../../core/history';
import { RUN_PRIORITY } from '../../core/priority';

/**
 * Overlap `steer`: a workflow cannot send an update, so an activity sends the live run its steered
 * events and brings back its answer. Retried until the run answers (or is found closed).
 */
const { steerRun } = proxyActivities<CoalesceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

/** Workflow time (the activation's, replayed from history): debounce and idle timing are measured in it. */
// eslint-disable-next-line no-restricted-syntax
const now = (): number => Date.now();

/**
 * The coalescer of one (agent, wake key): an entity workflow (ID `agent#wakeKey`) that turns every
 * wake about one thing, from every trigger, into as few runs as the agent's policy allows. Events
 * reach it straight from the gate by update-with-start (`offer`, batched per gate process), each
 * answered with its decision; an offer not answered in time comes again as a signal (durable at once).
 * It deduplicates events by key itself ({@link SeenTable}, for the agent's dedup horizon, across
 * continue-as-new), answers a redelivery with the first decision and refuses other inputs under a
 * decided key (`mismatch`).
 *
 * The decisions (debounce, maxWait, `whileRunning`, stale, repeated offers) are {@link CoalescerMachine}'s;
 * this workflow feeds it messages and performs what it decides:
 * - Runs are child workflows (ID `agent#wakeKey@<opening event key>`), abandoned on close so the
 *   coalescer can continue-as-new under them; a run tells its coalescer when it ends.
 * - Bounded history: continues as new when Temporal suggests it (history size, or 90% of the
 *   per-run update limit); closes after `idleCloseMs` with no event and no run, once its newest
 *   decided event is past the dedup horizon.
 */
export async function coalescerWorkflow(input: CoalescerInput): Promise<CoalescerState> {
  const { agent, wakeKey, policy } = input;
  const machine = new CoalescerMachine({ agent, wakeKey, policy }, input.state ?? initialState(now()));
  let dirty = false;

  const ended = (runKey: string, terminalReason: TerminalReason) => {
    if (machine.runEnded({ runKey, terminalReason }, now())) dirty = true;
  };

  setHandler(
    offerUpdate,
    (offers) => {
      const answers = offers.map((o) => machine.offer(o, now()));
      dirty = true;
      return answers;
    },
    {
      validator: (offers) => {
        if (!Array.isArray(offers) || offers.some((o) => !o?.event?.eventKey || !o.event.source))
          throw new Error('each offer needs event.eventKey and event.source');
      },
    },
  );
  setHandler(offerSignal, (offers) => {
    for (const o of offers) if (o?.event?.eventKey && o.event.source) machine.offer(o, now());
    dirty = true;
  });
  setHandler(forgetUpdate, ({ runKey }) => machine.forgetRun(runKey));
  setHandler(eventQuery, ({ eventKey }) => {
    const known = machine.lookup(eventKey);
    if (!known) return null;
    const { decidedAtMs, ...answer } = known;
    return { ...answer, agent, wakeKey, eventKey, decidedAt: new Date(decidedAtMs).toISOString() };
  });
  setHandler(runEndedSignal, ({ runKey, terminalReason }) => ended(runKey, terminalReason));
  setHandler(deliverySignal, ({ eventKey, deliveryIds }) => {
    if (eventKey) machine.redelivered(eventKey, deliveryIds);
  });
  setHandler(coalescerQuery, (opts) => ({
    agent,
    wakeKey,
    policy,
    state: { ...machine.state, seen: machine.state.seen.slice(-(opts?.seenLast ?? 200)) },
    seenCount: machine.seen.size,
    coalescerId: machine.coalescerId,
    historyLength: workflowInfo().historyLength,
  }));

  const startRun = async (b: Batch) => {
    try {
      const child = await startChild<typeof runWorkflow>('runWorkflow', {
        workflowId: b.runKey,
        args: [runInputOf({ agent, wakeKey }, b)],
        // The run outlives a continue-as-new (or a close) of its coalescer; it reports its end by signal.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        // Not the coalescer's own (admission) priority, which a child would inherit.
        priority: RUN_PRIORITY,
      });
      // Also watch it directly while this coalescer run lives: a run terminated by hand sends no signal.
      void child.result().then(
        (r: RunResult) => ended(b.runKey, r.terminalReason),
        () => ended(b.runKey, 'failed'),
      );
    } catch (err) {
      // Its ID is taken only if this very batch was started before (the IDs are unique per opening
      // event): it runs, and it will report. Anything else is a defect for the workflow task to retry.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };

  // One timer for the next due time, kept while offers arrive: each event of a burst pushes the
  // debounce back, and a new timer per offer (started, then cancelled) would cost the server two
  // history events and a command per event. A timer that fires early only makes the loop look again.
  let timer: { untilMs: number; scope: CancellationScope; fired: Promise<void> } | undefined;
  const wakeAt = (untilMs: number) => {
    const scope = new CancellationScope();
    const mine = {
      untilMs,
      scope,
      fired: scope
        .run(() => sleep(Math.max(1, untilMs - now())))
        .then(
          () => {
            if (timer === mine) timer = undefined;
          },
          () => new Promise<void>(() => undefined), // cancelled for an earlier one: never settles
        ),
    };
    return mine;
  };

  // Signals to runs are awaited in the loop, never sent from a handler: Temporal drops a signal whose
  // sender has closed (continued as new) by the time it is delivered.
  for (;;) {
    const info = workflowInfo();
    const step = machine.next(now(), info.continueAsNewSuggested || info.historyLength >= ENTITY_HISTORY_EVENTS);
    switch (step.kind) {
      case 'supersede': {
        const live = getExternalWorkflowHandle(step.runKey);
        // The live run learns who supersedes it before its cancellation arrives (delivered in order).
        await live
          .signal(supersedeSignal, { by: step.by })
          .then(() => live.cancel())
          .catch(() => undefined); // the run already ended: its runEnded signal is on the way
        break;
      }
      case 'record-skipped':
        await getExternalWorkflowHandle(step.runKey)
          .signal(skippedSignal, { events: step.events })
          .catch(() => undefined);
        break;
      case 'steer': {
        // Awaited here, in the loop: no continue-as-new or close happens while a steer is unanswered,
        // and events the run did not take go back to the machine (the follow-up batch), never dropped.
        const answer = await steerRun({ coalescerId: machine.coalescerId, runKey: step.runKey, id: step.id, events: step.events });
        machine.steerAnswered(step.runKey, answer, step.events, now());
        break;
      }
      case 'start':
        await startRun(step.batch);
        break;
      case 'continue-as-new':
        await condition(allHandlersFinished);
        return continueAsNew<typeof coalescerWorkflow>({ agent, wakeKey, policy, state: machine.state });
      case 'close':
        await condition(allHandlersFinished);
        if (machine.idle) return machine.state;
        break;
      case 'wait':
        dirty = false;
        if (step.untilMs !== undefined && (!timer || timer.untilMs > step.untilMs)) {
          timer?.scope.cancel();
          timer = wakeAt(step.untilMs);
        }
        await (timer ? Promise.race([condition(() => dirty), timer.fired]) : condition(() => dirty));
        break;
    }
  }
}
