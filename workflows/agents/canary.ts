import { proxyActivities } from '@temporalio/workflow';
import type { createCanaryActivities } from '../../activities/canary';
import type { WakeInput } from '../types';

const { canaryRecord } = proxyActivities<ReturnType<typeof createCanaryActivities>>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
});

const { canaryHold } = proxyActivities<ReturnType<typeof createCanaryActivities>>({
  startToCloseTimeout: '2 hours',
  // A hold heartbeats every second, so a dead worker is noticed in 10 s and cancellation reaches it.
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 5 },
});

export interface CanaryOutput {
  recordedBy: string;
  heldMs: number;
}

/** The diagnostic agent behind `ping`: record the event, hold if asked, succeed. */
export async function runCanary(input: WakeInput, setPhase: (phase: string) => void): Promise<CanaryOutput> {
  setPhase('recording');
  const recorded = await canaryRecord({ eventKey: input.eventKey, deliveryId: input.deliveryId, payload: input.payload });
  const holdMs = typeof input.payload.holdMs === 'number' ? input.payload.holdMs : 0;
  if (holdMs > 0) {
    setPhase('holding');
    await canaryHold({ holdMs });
  }
  return { recordedBy: recorded.worker, heldMs: holdMs };
}
