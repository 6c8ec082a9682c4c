import { activityInfo, getClient } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { CoalesceActivities } from '../workflows/contracts';
import { agentEventId } from '../workflows/ids';
import { offerUpdate } from '../workflows/messages';

/** Activities of the coalescing path. */
export function createCoalesceActivities(): CoalesceActivities {
  return {
    /**
     * Offer one admitted event to its coalescer, starting the coalescer if none is running
     * (update-with-start, conflict policy USE_EXISTING), and return the coalescer's decision. Run as
     * a local activity of the event's admission record, so the offer is durable with the record: a
     * retry sends the same update ID (the admission record's ID), which Temporal deduplicates within
     * the coalescer's run, and the coalescer repeats its answer to an event it has already seen.
     */
    async offerToCoalescer(input) {
      const info = activityInfo();
      const start = new WithStartWorkflowOperation('coalescerWorkflow', {
        workflowId: input.coalescerId,
        taskQueue: info.taskQueue,
        args: [{ agent: input.agent, wakeKey: input.wakeKey, policy: input.policy }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return getClient().workflow.executeUpdateWithStart(offerUpdate, {
        args: [input.offer],
        // One update per admission record's run: its retries are deduplicated by Temporal within the
        // coalescer's run; a re-armed event (a new record) is a new offer.
        updateId: `${agentEventId(input.agent, input.offer.event.eventKey)}/${input.offer.admissionRunId ?? ''}`,
        startWorkflowOperation: start,
      });
    },
  };
}
