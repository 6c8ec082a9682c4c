import type { ChatMessage } from '../../core/contracts';
import type { AbsorbedEvent, ResumedHold } from '../../core/types';

type SteeredEvent = AbsorbedEvent & { payload: Record<string, unknown> };

/**
 * Overlap `steer`: the events a coalescer sends into its live run (update `steer`), until the run's
 * model is given them as one message before its next turn.
 *
 * Why no event is lost between "sent" and "the run began committing": the update handler and the
 * agent loop run in one workflow thread, so `take` (the handler) and `close` (the loop, at the very
 * point it decides to commit or end on the model's answer, after checking that nothing is waiting)
 * never interleave. An event taken before `close` is waiting, so the loop gives it to the model and
 * asks again instead of committing; one that arrives after `close` is refused in the update's answer,
 * and its coalescer puts it in the follow-up batch. The coalescer learns which from the update's
 * result, so each event is either the run's or the follow-up run's, never neither.
 */
export class SteerInbox {
  /** Keys of every event taken, in order (the run's result lists them as `steered`). */
  readonly taken: string[];
  private waiting: SteeredEvent[];
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

  /** The run takes no more: it is about to commit, or it ends. Check {@link pending} first, in the same synchronous step. */
  close(): void {
    this.closed = true;
  }

  /** The waiting events as one user message for the model's next turn (none when nothing waits); they are given. */
  drain(): ChatMessage[] {
    if (!this.waiting.length) return [];
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

  /** What a held run carries into its next run when it continues as new. */
  carried(): ResumedHold['steered'] {
    return { taken: [...this.taken], waiting: [...this.waiting] };
  }
}
