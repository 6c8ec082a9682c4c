import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowUpdateFailedError } from '@temporalio/client';

/** Backoff between tries: doubling from this, at most MAX_BACKOFF_MS, jittered by half. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2_000;

/**
 * An update to the supervisor, tried again while its failure may pass (the in-flight limit, a
 * workflow task failing after a worker that held it was killed, no worker polling yet), with a
 * jittered doubling backoff, within `deadlineMs`. Not tried again: a refusal by the supervisor itself
 * (`WorkflowUpdateFailedError`, its validator said no), or a failure whose next try would pass the
 * deadline. `onFailure` sees every failure, `retrying` says whether another try follows.
 */
export async function updateWithin<T>(
  deadlineMs: number,
  attempt: () => Promise<T>,
  onFailure: (err: unknown, retrying: boolean) => void = () => undefined,
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      const backoffMs = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** n) * (0.5 + Math.random() / 2);
      const retrying = !(err instanceof WorkflowUpdateFailedError) && Date.now() + backoffMs < deadlineMs;
      onFailure(err, retrying);
      if (!retrying) throw err;
      await sleep(backoffMs, undefined, { ref: false });
    }
  }
}
