import { ParentClosePolicy, startChild, workflowInfo, WorkflowIdReusePolicy, log } from '@temporalio/workflow';
import type { RunInput, RunResult } from '../../src/core/run-types';
import type { RunOutcome } from '../../src/core/run-state';
import type { RunVerdict } from '../../src/core/supervisor-types';
import { inShadowSample, LIVE_SESSION, shadowInput, whyNotShadowed } from '../../src/core/shadow';
import { startIndex } from '../../src/core/run-index';

/** How long a live shadow may stay open at most (its own wall-clock budget ends it before this). */
const LIVE_SHADOW_TIMEOUT = '1 day';

/**
 * A live shadow the supervisor did not let run: it ends here, `discarded`, before any token is spent,
 * rather than wait. A shadow is never held: the shadow caps are full (they slide), or the fleet is
 * halted. Undefined for any other run, or a verdict to run.
 */
export function shadowNotLetRun(input: RunInput, verdict: RunVerdict | undefined): RunOutcome | undefined {
  if (input.origin.kind !== 'shadow' || !verdict || verdict.kind === 'run') return undefined;
  const why = verdict.kind === 'hold' ? verdict.reason : `discarded by ${verdict.who}: ${verdict.reason}`;
  const cap = verdict.kind === 'hold' && verdict.hold === 'cap';
  return { reason: 'discarded', summary: `a live shadow not run: ${why}`, output: { shadowRefused: cap ? 'cap' : 'supervisor' } };
}

/**
 * A live shadow of this run (its agent's `shadow` option): when the run is in the sample and can be
 * shadowed faithfully, start the candidate on the same events as the run ends, as a child the run
 * does not wait for (ABANDON), under `shadow/live/<run key>`. Started before the run closes, so a
 * run that ends always leaves its shadow started; a shadow that exists already (a reset run) is left be.
 */
export async function startLiveShadow(input: RunInput, result: RunResult, sample: number | undefined): Promise<void> {
  if (sample === undefined || input.origin.kind === 'shadow' || !inShadowSample(input.runKey, sample)) return;
  if (whyNotShadowed(input, result) !== undefined || input.replay) return;
  const info = workflowInfo();
  const shadow = shadowInput(LIVE_SESSION, { workflowId: input.runKey, runId: info.runId, input }, true);
  try {
    await startChild('runWorkflow', {
      workflowId: shadow.runKey,
      args: [shadow],
      typedSearchAttributes: startIndex(shadow),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowExecutionTimeout: LIVE_SHADOW_TIMEOUT,
    });
  } catch (err) {
    log.warn('live shadow not started', { runKey: input.runKey, shadowRunKey: shadow.runKey, err: String(err) });
  }
}
