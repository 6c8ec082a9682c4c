import type { CoalescerState, SteerAnswer } from '../../src/core/coalesce-types';
import { charsOf, eventChars, type OfferedEvent } from '../../src/core/coalesce-batch';
import { CoalescerByHand } from './by-hand';

/**
 * Overlap `steer` in the coalescer machine (machine.ts): an event that comes while a run is live is
 * held by that run and owed to it (sent by the shell's `steer` step); the run's answer, a failed
 * delivery, or its end send the events it did not take to the follow-up batch. Pure, over the
 * machine's state.
 */
export abstract class CoalescerSteering extends CoalescerByHand {
  /** Overlap `steer`: events answered `steered` and not yet sent to that run (handed out before any continue-as-new). */
  protected owedSteer?: { runKey: string; events: OfferedEvent[] };

  /** The `steer` step's update could not be delivered: send that run no more; its end says which events its model saw. */
  steerFailed(runKey: string): void {
    const running = this.state.running;
    if (running?.runKey === runKey) running.steerClosed = true;
  }

  /**
   * The live run's answer to a `steer` step. Refused events (the run had begun committing, or ended),
   * and any it did not answer for, wait in the follow-up batch as with `buffer_one`; a run that refused
   * once is sent no more, so later events follow them there in the order they arrived.
   */
  steerAnswered(runKey: string, answer: SteerAnswer, events: OfferedEvent[], nowMs: number): void {
    const { state } = this;
    // An answer that comes after the run ended changes nothing: its end said which events its model saw.
    if (state.running?.runKey !== runKey) return;
    const refused = new Set(answer.refused);
    const accepted = new Set(answer.accepted.filter((k) => !refused.has(k)));
    const back = events.filter((e) => !accepted.has(e.eventKey));
    const summary = [...state.runs].reverse().find((r) => r.runKey === runKey);
    if (summary) summary.events += events.length - back.length;
    if (!back.length) return;
    state.counts.steerRefused = (state.counts.steerRefused ?? 0) + back.length;
    this.followUp(runKey, back, nowMs);
  }

  /** Steered events the live run `runKey` did not take: out of its list, into the follow-up batch. */
  protected followUp(runKey: string, events: OfferedEvent[], nowMs: number): void {
    const { state } = this;
    const running = state.running?.runKey === runKey ? state.running : undefined;
    const keys = new Set(events.map((e) => e.eventKey));
    if (running) {
      running.steerClosed = true;
      running.events = running.events.filter((e) => !keys.has(e.eventKey));
      running.chars = undefined;
      running.steered = (running.steered ?? []).filter((k) => !keys.has(k));
    }
    state.lastActivityMs = nowMs;
    for (const steered of events) {
      const holds = (b?: { events: { eventKey: string }[]; runKey: string }) => b?.runKey !== runKey && b?.events.some((x) => x.eventKey === steered.eventKey);
      if (holds(state.pending) || holds(state.running)) continue; // refused and unseen: one event, one place
      const e = { ...steered, steeredFrom: steered.steeredFrom ?? runKey }; // the trail names both runs
      if (state.pending) this.addTo(state.pending, e, nowMs);
      else state.pending = this.open(e, nowMs);
      // Its dedup entry names the run that takes it now: a redelivery is answered from that run, and
      // a rearm of the run it was steered into does not forget it.
      this.seen.retake(e.eventKey, this.tokenOf(state.pending.runKey));
    }
  }

  /** Overlap `steer`: the event is the live run's now (held there, so never taken twice) and owed to it. */
  protected steer(running: NonNullable<CoalescerState['running']>, e: OfferedEvent): void {
    this.state.counts.steered = (this.state.counts.steered ?? 0) + 1;
    running.chars = charsOf(running) + eventChars(e);
    running.events.push(e);
    (running.steered ??= []).push(e.eventKey);
    if (this.owedSteer?.runKey === running.runKey) this.owedSteer.events.push(e);
    else this.owedSteer = { runKey: running.runKey, events: [e] };
  }
}
