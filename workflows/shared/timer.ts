import { CancellationScope, condition, sleep } from '@temporalio/workflow';
import { workflowNow } from './clock';

/**
 * One timer per due time: when an entity's loop comes round for a message and its due time has not
 * moved, it waits on the timer it started before instead of starting another (each timer started is
 * an action Temporal bills, and messages come often). A timer that fired is not waited on again.
 */
export function timerAt(): (atMs: number) => Promise<void> {
  let current: { atMs: number; fired: boolean; done: Promise<void> } | undefined;
  return (atMs) => {
    if (current?.atMs !== atMs || current.fired) {
      const timer: { atMs: number; fired: boolean; done: Promise<void> } = { atMs, fired: false, done: Promise.resolve() };
      timer.done = sleep(Math.max(1, atMs - workflowNow())).then(() => {
        timer.fired = true;
      });
      current = timer;
    }
    return current.done;
  };
}

/** Until `woke` holds or `timer` fires; the wait on `woke` is cancelled when the timer comes first. */
export async function untilWokeOr(woke: () => boolean, timer: Promise<void>): Promise<void> {
  const scope = new CancellationScope();
  const waiting = scope.run(() => condition(woke)).catch(() => undefined);
  await Promise.race([waiting, timer]);
  scope.cancel();
}
