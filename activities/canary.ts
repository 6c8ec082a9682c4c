import { activityInfo, heartbeat, log, sleep } from '@temporalio/activity';

export interface CanaryRecordInput {
  eventKey: string;
  deliveryId?: string;
  payload: Record<string, unknown>;
}

/** The canary's activities: record the event it was woken for; hold for a while, cancellably. */
export function createCanaryActivities() {
  return {
    /** Logs the event with the worker that ran it; returns that worker's identity. Never fails on its own. */
    async canaryRecord(input: CanaryRecordInput): Promise<{ worker: string; attempt: number }> {
      const info = activityInfo();
      log.info('canary woke', { eventKey: input.eventKey, deliveryId: input.deliveryId, attempt: info.attempt });
      return { worker: `pid:${process.pid}`, attempt: info.attempt };
    },

    /**
     * Waits `holdMs` ms, heartbeating every second with the time held so far; a retry resumes from
     * the last heartbeat. Cancellation (kill, workflow cancel, worker shutdown) ends it at once.
     */
    async canaryHold({ holdMs }: { holdMs: number }): Promise<{ heldMs: number }> {
      const resumedAt = Number(activityInfo().heartbeatDetails ?? 0) || 0;
      let held = resumedAt;
      while (held < holdMs) {
        const step = Math.min(1000, holdMs - held);
        await sleep(step);
        held += step;
        heartbeat(held);
      }
      return { heldMs: held };
    },
  };
}
