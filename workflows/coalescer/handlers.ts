import { condition, setHandler, workflowInfo } from '@temporalio/workflow';
import type { CoalescerInput, RunEnded } from '../../src/core/coalesce-types';
import { adoptSignal, coalescerQuery, deliverySignal, eventQuery, forgetUpdate, offerSignal, offerUpdate, runEndedSignal } from '../../src/core/messages';
import type { CoalescerMachine } from './machine';
import { SEEN_CAPACITY } from './seen';
import { workflowNow } from '../shared/clock';

/** How long a person's `forget` waits for a closed run's end to reach the coalescer, ms. */
const FORGET_WAITS_MS = 30_000;

/** What the coalescer's loop (workflow.ts) and its handlers share: `dirty` is set by whatever may change what the machine does next. */
export interface LoopFlag {
  dirty: boolean;
}

/**
 * The coalescer's messages, fed to its machine: offers (update and signal), a person's forget and
 * adopt, a run's end and a redelivery's delivery ids; the `event` and `coalescer` queries. Each
 * that may change what the machine does next sets `loop.dirty`; a run's end goes through `ended`.
 */
export function listen(
  input: CoalescerInput,
  machine: CoalescerMachine,
  loop: LoopFlag,
  ended: (end: RunEnded) => void,
  /** A live run of a chain terminated by hand was adopted: it is asked to report its end here. */
  adoptedLive: (runKey: string) => void = () => undefined,
  /** Look at a run through Temporal now (activity `runEnd`), its end fed to the machine if it has one. */
  lookAt: (runKey: string) => Promise<void> = () => Promise.resolve(),
): void {
  const { agent, wakeKey, policy } = input;
  setHandler(
    offerUpdate,
    async (offers) => {
      let answers = offers.map((o) => machine.offer(o, workflowNow()));
      loop.dirty = true;
      // A skip is answered once its run has taken the record of it (skips.ts); one it refused is
      // decided again, and the offer is answered from the batch that took it. Decided again, it can be
      // a skip for the next live run: then that run's record is waited for too.
      const skipOpen = () => offers.some((o, i) => answers[i]!.decision === 'skipped' && machine.skips.open(o.event.eventKey));
      while (skipOpen()) {
        await condition(() => !skipOpen());
        answers = answers.map((a, i) => (a.decision === 'skipped' ? machine.offer(offers[i]!, workflowNow()) : a));
        loop.dirty = true; // decided again as a skip, its record is owed: the loop must send it
      }
      const forgottenEarly = machine.state.counts.forgottenEarly;
      return forgottenEarly ? answers.map((a) => ({ ...a, forgottenEarly })) : answers;
    },
    {
      validator: (offers) => {
        if (!Array.isArray(offers) || offers.some((o) => !o?.event?.eventKey || !o.event.source))
          throw new Error('each offer needs event.eventKey and event.source');
      },
    },
  );
  setHandler(offerSignal, (offers) => {
    for (const o of offers) if (o?.event?.eventKey && o.event.source) machine.offer(o, workflowNow());
    loop.dirty = true;
  });
  // `wakegate rearm` forgets a closed run's events before it deletes the run. A run's end reaches
  // this execution by its child result (or a report, or the watch) a moment after the run closed, and
  // not at all from a run terminated by hand after a continue-as-new: one not taken yet is looked at
  // here, by the handler itself (the loop may be waiting for handlers to continue as new), while the
  // run is still there (it is not deleted until this update returns), so the events its model saw are
  // never forgotten as unseen and run again. A foreign run (a live run adopted from a chain terminated
  // by hand while this chain had its own) is held the same way: its end, not taken yet, may name the
  // steered events its model saw. A live one (not the CLI's case) is refused as before, after the
  // bounded wait.
  setHandler(forgetUpdate, async ({ runKey }) => {
    const held = () => machine.state.running?.runKey === runKey || machine.state.foreign?.some((f) => f.runKey === runKey) === true;
    if (held()) {
      await lookAt(runKey);
      await condition(() => !held(), FORGET_WAITS_MS);
    }
    return machine.forgetRun(runKey);
  });
  setHandler(adoptSignal, (left) => {
    if (!Array.isArray(left?.seen)) return;
    machine.adopt(left);
    for (const run of [left.live, ...(left.foreign ?? [])]) if (run && machine.holdsRun(run.runKey)) adoptedLive(run.runKey);
  });
  setHandler(eventQuery, ({ eventKey }) => {
    const known = machine.known(eventKey);
    if (!known) return null;
    const { decidedAtMs, ...answer } = known;
    return { ...answer, agent, wakeKey, eventKey, decidedAt: new Date(decidedAtMs).toISOString() };
  });
  setHandler(runEndedSignal, (end) => ended(end));
  setHandler(deliverySignal, ({ eventKey, deliveryIds }) => {
    if (eventKey) machine.redelivered(eventKey, deliveryIds);
  });
  setHandler(coalescerQuery, (opts) => ({
    agent,
    wakeKey,
    policy,
    state: { ...machine.state, seen: machine.state.seen.slice(-(opts?.seenLast ?? 200)) },
    seenCount: machine.seen.size,
    seenCapacity: SEEN_CAPACITY,
    coalescerId: machine.coalescerId,
    historyLength: workflowInfo().historyLength,
    openSkips: machine.skips.openSkips(),
  }));
}
