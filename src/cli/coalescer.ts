import { WorkflowNotFoundError } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { coalescerId } from '../core/ids';
import { coalescerQuery } from '../core/messages';
import { ExitCode, printJson } from './output';

/**
 * `wakegate coalescer <agent> <wake key>`: the coalescer's policy, its pending batch and live run,
 * its counts (offered, started, coalesced, skipped, stale) and recent runs, from its `coalescer`
 * query; or, when none is running (idle and closed, or never woken), says so.
 */
export async function showCoalescer(agent: string, wakeKey: string): Promise<number> {
  const client = await connectClient(loadConfig());
  const id = coalescerId(agent, wakeKey);
  try {
    const handle = client.workflow.getHandle(id);
    const desc = await handle.describe();
    if (desc.status.name !== 'RUNNING') {
      printJson({ coalescerId: id, running: false, status: desc.status.name, closeTime: desc.closeTime?.toISOString() ?? null });
      return ExitCode.ok;
    }
    const status = await handle.query(coalescerQuery);
    const { recent, firstAnswers, seenOpeners: _openers, ...state } = status.state;
    printJson({
      coalescerId: id,
      running: true,
      historyLength: status.historyLength,
      policy: status.policy,
      // Its dedup table: how many events it holds, how many it holds within the horizon before the
      // oldest leave early, and how many left early so far.
      dedup: {
        held: status.seenCount,
        capacity: status.seenCapacity,
        forgottenEarly: state.counts.forgottenEarly ?? 0,
        ...(state.seenFloorMs ? { floor: new Date(state.seenFloorMs).toISOString() } : {}),
      },
      ...state,
      // Answers kept for retried offers: first decisions' (as a few facts each) and whole ones.
      recentAnswers: recent.length + (firstAnswers?.length ?? 0),
    });
    return ExitCode.ok;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    printJson({ coalescerId: id, running: false, status: 'NOT_FOUND' });
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
