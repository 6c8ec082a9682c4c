import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  proxyActivities,
  sleep,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { Batch, CoalescerInput, CoalescerState, RunEnded } from '../../src/core/coalesce-types';
import { skippedSignal, supersedeSignal } from '../../src/core/messages';
import { runEndOf } from '../../src/core/run-end';
import type { RunResult } from '../../src/core/run-types';
import { chainOf } from '../../src/core/ids';
import type { CoalesceActivities } from '../../src/core/contracts';
import type { runWorkflow } from '../run/workflow';
import { CoalescerMachine, initialState, runInputOf, type NextAction } from './machine';
import { carriedInput } from './carry';
import { listen, type LoopFlag } from './handlers';
import { ReportAsks, resetByHand } from './report';
import { RunWatch } from './watch';
import { ENTITY_HISTORY_EVENTS } from '../../src/core/history';
import { RUN_PRIORITY } from '../../src/core/priority';
import { startIndex } from '../../src/core/run-index';
import { workflowNow } from '../shared/clock';

/**
 * Overlap `steer`: a workflow cannot send an update, so an activity sends the live run its steered
 * events and brings back its answer. Not awaited by the loop, and retried a few times only: a run
 * that cannot answer never holds its coalescer, since the run's end says which events its model saw.
 */
const { steerRun } = proxyActivities<CoalesceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});
/** The watch of the live run: a run terminated by hand (or one this execution did not start) sends no end. */
const { runEnd } = proxyActivities<CoalesceActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3 },
});

/** What a run under a taken ID took (after a reset by hand): retried until Temporal answers. */
const { runTook: readTaken } = proxyActivities<CoalesceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** A signal's fate, as a boolean: delivered, or refused (the workflow it was sent to has closed). */
const DELIVERED = [() => true, () => false] as const;

/**
 * The coalescer of one (agent, wake key): an entity workflow (ID `agent#wakeKey`) that turns every
 * wake about one thing, from every trigger, into as few runs as the agent's policy allows. Events
 * reach it straight from the gate by update-with-start (`offer`, several to an update per gate process), each
 * answered with its decision; an offer not answered in time comes again as a signal (durable at once).
 * It deduplicates events by key itself ({@link SeenTable}, for the agent's dedup horizon, across
 * continue-as-new), answers a redelivery with the first decision and refuses other inputs under a
 * decided key (`mismatch`).
 *
 * The decisions (debounce, maxWait, `whileRunning`, stale, repeated offers) are {@link CoalescerMachine}'s;
 * this workflow feeds it messages and performs what it decides:
 * - Runs are child workflows (ID `agent#wakeKey@<opening event key>~<chain>.<n>`, unique for good:
 *   src/core/ids.ts `batchRunToken`), abandoned on close so the coalescer can continue-as-new under
 *   them. The execution that started a run follows it to its end (`child.result()`); one about to
 *   continue as new with it live asks it to report its end by signal (ReportAsks).
 * - Bounded history: continues as new when Temporal suggests it (history size, or 90% of the
 *   per-run update limit); closes after `idleCloseMs` with no event and no run, once its newest
 *   decided event is past the dedup horizon.
 */
export async function coalescerWorkflow(input: CoalescerInput): Promise<CoalescerState> {
  const { agent, wakeKey, policy } = input;
  // A new chain names its runs apart from any earlier chain's (src/core/ids.ts `chainOf`).
  const chain = chainOf(workflowInfo().firstExecutionRunId);
  const machine = new CoalescerMachine({ agent, wakeKey, policy }, input.state ?? initialState(workflowNow(), chain));
  // Started with an offer (answered by the gate as `decideFirst` does): decided before any message.
  if (input.first && !input.state) machine.offer(input.first, workflowNow());
  const loop: LoopFlag = { dirty: false };

  const ended = (end: RunEnded) => {
    if (machine.runEnded(end, workflowNow())) loop.dirty = true;
  };
  const watch = new RunWatch(runEnd, ended, () => (loop.dirty = true));
  /** Runs this execution started, each with its end as the child's result gives it (followed till then). */
  const children = new Map<string, Promise<void>>();
  const reporting = new ReportAsks(machine, watch, runEnd, ended, loop);
  listen(
    input,
    machine,
    loop,
    ended,
    (runKey) => reporting.adopted(runKey),
    (runKey) =>
      runEnd(runKey).then(
        (end) => {
          if (end) ended(end);
        },
        () => undefined, // the bounded wait decides
      ),
  );

  const startRun = async (first: Batch) => {
    for (let b: Batch | undefined = first; b;) {
      if (await startOne(b)) return;
      // Its ID was taken: only by a run a discarded branch of this coalescer started (a reset by hand).
      // The events that run took stay its own. Read until it answers: passed over unread, its events
      // would run again under new effect keys.
      const took = await readTaken(b.runKey);
      const runKey = b.runKey;
      b = machine.metTaken(b, took, workflowNow());
      // Not this execution's child: asked to report its end here, as an adopted run is (refused, it has closed: looked at now).
      if (!b && machine.state.running?.runKey === runKey) reporting.adopted(runKey);
    }
  };
  const startOne = (b: Batch) => startBatchRun({ agent, wakeKey }, b, watch, ended, children);

  const timer = new WakeTimer();

  // Signals to runs are awaited in the loop, never sent from a handler: Temporal drops a signal whose
  // sender has closed (continued as new) by the time it is delivered.
  for (;;) {
    if (reporting.owes) await reporting.sendOwed();
    const info = workflowInfo();
    const step = machine.next(workflowNow(), info.continueAsNewSuggested || info.historyLength >= ENTITY_HISTORY_EVENTS);
    switch (step.kind) {
      case 'supersede':
        // The live run learns who supersedes it before its cancellation arrives (delivered in order).
        // The run cancels itself, unless it has begun its commit stage: then it finishes, and its end
        // (commitBegan) tells the machine to drop the events it carried from the restart batch.
        // Refused: the run has closed; its end is on the way, unless it was terminated by hand: look now.
        await getExternalWorkflowHandle(step.runKey)
          .signal(supersedeSignal, { by: step.by })
          .catch(() => watch.soon(machine.state.running, step.runKey));
        break;
      case 'record-skipped': {
        // Refused: the run has closed, and its end may never come (terminated by hand): look at it now.
        // Not cancellable: a person cancelling the coalescer must not make a delivered record read as refused.
        const record = () => getExternalWorkflowHandle(step.runKey).signal(skippedSignal, { events: step.events });
        const delivered = await CancellationScope.nonCancellable(record).then(...DELIVERED);
        if (!delivered) watch.soon(machine.state.running, step.runKey);
        machine.skipsRecorded(step.runKey, delivered, workflowNow());
        break;
      }
      case 'steer':
        steer(machine, watch, loop, step);
        break;
      case 'start':
        await startRun(step.batch);
        break;
      case 'continue-as-new':
      case 'close':
        // Handlers first; an offer meanwhile (it may owe a skip's record) sends the loop round again.
        loop.dirty = false;
        await condition(() => allHandlersFinished() || loop.dirty);
        if (!allHandlersFinished() || loop.dirty) break;
        // The live run this execution started reports its end to the next one (it is not that one's child).
        if (!(await reporting.beforeHandOver(children))) break;
        if (!allHandlersFinished() || loop.dirty) break;
        // At most CARRIED_BUDGET_BYTES, under the SDK's payload warning, but with foreign runs held (carry.ts).
        if (step.kind === 'continue-as-new') return continueAsNew<typeof coalescerWorkflow>(carriedInput({ agent, wakeKey, policy }, machine));
        if (machine.idle) return machine.state;
        break;
      case 'wait': {
        loop.dirty = false;
        const due = watch.due(machine.state.running, machine.state.pending !== undefined, workflowNow(), machine.state.foreign);
        const fired = timer.at(due === undefined ? step.untilMs : Math.min(due, step.untilMs ?? Infinity));
        await (fired ? Promise.race([condition(() => loop.dirty), fired]) : condition(() => loop.dirty));
        break;
      }
    }
  }
}

/**
 * Overlap `steer`: send the live run its steered events. Not awaited: the answer routes refused
 * events early; the run's end (runEnded, `seen`) decides the rest, so an answer lost to a
 * continue-as-new, or one that never comes, drops nothing.
 */
function steer(machine: CoalescerMachine, watch: RunWatch, loop: LoopFlag, step: Extract<NextAction, { kind: 'steer' }>): void {
  const { runKey, events } = step;
  void steerRun({ coalescerId: machine.coalescerId, runKey, id: step.id, events })
    .then(
      (answer) => machine.steerAnswered(runKey, answer, events, workflowNow()),
      () => {
        machine.steerFailed(runKey);
        watch.soon(machine.state.running, runKey); // a run that cannot answer may be gone
      },
    )
    .finally(() => (loop.dirty = true));
}

/**
 * One timer for the next due time, kept while offers arrive: each event of a burst pushes the
 * debounce back, and a new timer per offer (started, then cancelled) would cost the server two
 * history events and a command per event. A timer that fires early only makes the loop look again.
 */
class WakeTimer {
  private timer?: { untilMs: number; scope: CancellationScope; fired: Promise<void> };

  /** The timer, moved to `untilMs` if that is sooner than the one set: what settles when it fires (never, once cancelled), if any is set. */
  at(untilMs: number | undefined): Promise<void> | undefined {
    if (untilMs !== undefined && (!this.timer || this.timer.untilMs > untilMs)) {
      this.timer?.scope.cancel();
      this.timer = this.wakeAt(untilMs);
    }
    return this.timer?.fired;
  }

  private wakeAt(untilMs: number) {
    const scope = new CancellationScope();
    const mine = {
      untilMs,
      scope,
      fired: scope
        .run(() => sleep(Math.max(1, untilMs - workflowNow())))
        .then(
          () => {
            if (this.timer === mine) this.timer = undefined;
          },
          () => new Promise<void>(() => undefined), // cancelled for an earlier one: never settles
        ),
    };
    return mine;
  }
}

/**
 * Start one batch's run, followed (its end comes to `ended`); false when its ID was taken (then it
 * is started under a new one, never waited for).
 */
async function startBatchRun(
  self: { agent: string; wakeKey: string },
  b: Batch,
  watch: RunWatch,
  ended: (end: RunEnded) => void,
  children: Map<string, Promise<void>>,
): Promise<boolean> {
  try {
    const input = runInputOf(self, b);
    const child = await startChild<typeof runWorkflow>('runWorkflow', {
      workflowId: b.runKey,
      args: [input],
      // Indexed from its start: no upsert in its first workflow task (src/core/run-index.ts).
      typedSearchAttributes: startIndex(input),
      // The run outlives a continue-as-new (or a close) of its coalescer; it reports its end by signal then (asked to).
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      priority: RUN_PRIORITY, // not the coalescer's, which a child inherits
    });
    // Followed while this execution lives: its end comes as the child's result, which tells all a
    // signal would (src/core/run-end.ts); a run terminated by hand sends no end, but closes as a child.
    // Not in an execution reset by hand: a child's close after the reset point is not in its history
    // (only signals are reapplied), so the watch looks at its runs instead.
    if (!resetByHand()) watch.follow(b.runKey);
    children.set(
      b.runKey,
      child.result().then(
        (r: RunResult) => ended(runEndOf(b.runKey, r)),
        () => ended({ runKey: b.runKey, terminalReason: 'failed' }), // a failed run signalled its end first (the facts)
      ),
    );
    return true;
  } catch (err) {
    // Run keys are unique for good (src/core/ids.ts): taken only after a reset of this coalescer by hand.
    // Anything else is a defect for the workflow task to retry.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return false;
  }
}
