import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { CoalesceActivities } from '../../core/contracts';
import type { AdmissionInput, AdmissionResult } from '../../core/coalesce-types';

/**
 * A regular activity, not a local one: a local activity holds its workflow task's slot while it runs,
 * and the offer waits for the coalescer's own workflow task on the same workers, so a burst of
 * admissions could take every slot and starve the coalescers they wait for.
 */
const { offerToCoalescer } = proxyActivities<CoalesceActivities>({
  startToCloseTimeout: '30 seconds',
  // Until the coalescer answers: a coalescer closing as the offer arrives, or a busy one, answers on a later try.
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

/**
 * The admission record of one event for one coalescing agent (workflow ID `agent@eventKey`). The
 * gate starts it with Temporal's ID policies (conflict FAIL, reuse ALLOW_DUPLICATE_FAILED_ONLY) and
 * the input's fingerprint as memo, exactly as it starts a run on the one-call path: a duplicate
 * delivery cannot start it twice, and once it has closed it answers every later delivery for as
 * long as the namespace keeps closed workflows, whatever became of the coalescer since.
 *
 * Its one step offers the event to the coalescer of (agent, wake key) as an activity, so the offer
 * is durable with the admission (an event the gate accepted always reaches its coalescer), and it
 * completes with the coalescer's decision and the run that took the event.
 */
export async function admissionWorkflow(input: AdmissionInput): Promise<AdmissionResult> {
  const answer = await offerToCoalescer({ ...input, offer: { ...input.offer, admissionRunId: workflowInfo().runId } });
  return { ...answer, agent: input.agent, wakeKey: input.wakeKey, eventKey: input.offer.event.eventKey };
}
