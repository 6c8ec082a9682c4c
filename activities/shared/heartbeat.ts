import { cancellationSignal, heartbeat } from '@temporalio/activity';

/**
 * Run `fn` heartbeating every second: a dead worker is noticed within the heartbeat timeout, and a
 * kill or cancel reaches the activity (Temporal delivers cancellation on a heartbeat) and aborts
 * `fn`'s I/O through the signal. `details` gives what each heartbeat carries (the last progress), so
 * the timer never overwrites a resume point with nothing.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>, details: () => unknown = () => undefined): Promise<T> {
  heartbeat(details());
  const timer = setInterval(() => heartbeat(details()), 1000);
  try {
    return await fn(cancellationSignal());
  } finally {
    clearInterval(timer);
  }
}
