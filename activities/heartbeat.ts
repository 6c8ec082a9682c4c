import { cancellationSignal, heartbeat } from '@temporalio/activity';

/**
 * Run `fn` heartbeating every second: a dead worker is noticed within the heartbeat timeout, and a
 * kill or cancel reaches the activity (Temporal delivers cancellation on a heartbeat) and aborts
 * `fn`'s I/O through the signal.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  heartbeat();
  const timer = setInterval(() => heartbeat(), 1000);
  try {
    return await fn(cancellationSignal());
  } finally {
    clearInterval(timer);
  }
}
