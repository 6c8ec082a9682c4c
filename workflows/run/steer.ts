import type { ChatMessage } from '../../src/core/contracts';
import type { AbsorbedEvent, ResumedHold } from '../../src/core/run-types';

type SteeredEvent = AbsorbedEvent & { payload: Record<string, unknown> };

/**
 * Overlap `steer`: the events a coalescer sends into its live run (update `steer`), until the run's
 * model is given them as one message before its next turn.
 *
 * Why no event is lost between "sent" and "the run ends": the update handler and the agent loop run
 * in one workflow thread, so `take` (the handler) and `close` (the run's end, or the loop's decision
 * to commit) never interleave. An event taken before `close` is either given to the model (a turn
 * that was charged and answered took it: {@link confirm}) or, when the run commits or ends first,
 * unseen: {@link close} returns it, the run drops it from its list of absorbed events and tells its
 * coalescer, which puts it in the follow-up batch. One that arrives after `close` is refused in the
 * update's answer and goes the same way. Each event is seen by the run or by the follow-up run,
 * never by neither, and never listed by a run whose model did not see it.
 */
export class SteerInbox {
  /** Keys of every event taken, in order. */
  readonly taken: string[];
  /** Keys of the taken events the model was given (a turn with them was answered). */
  readonly given: string[] = [];
  private waiting: SteeredEvent[];
  /** Drained for a turn not answered yet. */
  private inTurn: SteeredEvent[] = [];
  /** Taken and never given: the follow-up run's. */
  private readonly dropped: string[] = [];
  /** The same, in full (as the coalescer sent them). */
  readonly droppedEvents: SteeredEvent[] = [];
  private closed = false;

  constructor(carried?: ResumedHold['steered']) {
    this.taken = [...(carried?.taken ?? [])];
    this.waiting = [...(carried?.waiting ?? [])];
  }

  /** Taken events the model has not been given yet. */
  get pending(): boolean {
    return this.waiting.length > 0;
  }

  /** The update's work: take `events` unless closed (undefined: all refused); returns those new to the run (`holds` names the ones it has). */
  take(events: SteeredEvent[], holds: (eventKey: string) => boolean): SteeredEvent[] | undefined {
    if (this.closed) return undefined;
    const fresh = events.filter((e) => !holds(e.eventKey));
    this.waiting.push(...fresh);
    this.taken.push(...fresh.map((e) => e.eventKey));
    return fresh;
  }

  /**
   * The run takes no more: it is about to commit, or it ends. Check {@link pending} first, in the same
   * synchronous step, when the loop decides. Returns the keys of the taken events its model was never
   * given (they are the follow-up run's); idempotent.
   */
  close(): string[] {
    this.closed = true;
    this.droppedEvents.push(...this.inTurn, ...this.waiting);
    this.dropped.push(...[...this.inTurn, ...this.waiting].map((e) => e.eventKey));
    this.inTurn = [];
    this.waiting = [];
    return [...this.dropped];
  }

  /** The waiting events as one user message for the model's next turn (none when nothing waits); given once that turn is answered ({@link confirm}). */
  drain(): ChatMessage[] {
    if (!this.waiting.length) return [];
    this.inTurn.push(...this.waiting);
    const events = this.waiting.map((e) => ({ key: e.eventKey, type: e.type, entity: e.entity, occurredAt: e.occurredAt, payload: e.payload }));
    this.waiting = [];
    return [
      {
        role: 'user',
        content: JSON.stringify({
          note: 'New events about what you are working on arrived while you worked. Take them into account: your answer and the effects you propose must reflect them.',
          newEvents: events,
        }),
      },
    ];
  }

  /** The model answered a turn: the events drained for it were seen. */
  confirm(): void {
    this.given.push(...this.inTurn.map((e) => e.eventKey));
    this.inTurn = [];
  }

  /** What a held run carries into its next run when it continues as new. */
  carried(): ResumedHold['steered'] {
    return { taken: [...this.taken], waiting: [...this.inTurn, ...this.waiting] };
  }
}
