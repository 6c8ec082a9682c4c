import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SteerAnswer, SteerDelivery } from '../../src/core/coalesce-types';
import { steerUpdate } from '../../src/core/messages';
import type { RunResult } from '../../src/core/run-types';

/**
 * Overlap `steer`: send events into a live run by its `steer` update and return what it took and
 * what it refused. The update's ID is the delivery's, so a retry of this activity (a reply lost, a
 * worker gone) is the same update and Temporal answers it with the run's first answer.
 *
 * A run that has closed answers no update (Temporal: not found). Its result then says what it took
 * (`steered`): an update it accepted just before it closed; every other event never reached its
 * model and is refused, so the coalescer gives it to the follow-up run. A run that closed without a
 * result (failed, terminated) took nothing that counts: all refused. Nothing is dropped either way.
 */
export async function steerRun(client: Client, delivery: SteerDelivery): Promise<SteerAnswer> {
  const handle = client.workflow.getHandle(delivery.runKey);
  const keys = delivery.events.map((e) => e.eventKey);
  try {
    return await handle.executeUpdate(steerUpdate, { args: [{ events: delivery.events }], updateId: delivery.id });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const result = (await handle.result().catch(() => undefined)) as RunResult | undefined;
  const took = new Set(result?.steered ?? []);
  return { accepted: keys.filter((k) => took.has(k)), refused: keys.filter((k) => !took.has(k)) };
}
