import { ApplicationFailure } from '@temporalio/workflow';
import type { Proposal } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';
import type { AgentPolicy, EffectPolicy } from '../../src/core/policy';
import type { RunInput } from '../../src/core/run-types';
import type { RunOutcome } from '../../src/core/run-state';

/** What the commit stage carries out (or, in a shadow run, records): the staged effects, in order, and the answer that closed the loop. */
export interface Staged {
  answer: unknown;
  summary: string;
  proposals: Proposal[];
}

/** The agent's effect a proposal names; one it does not have fails the run for good. Shared by the real and the record-only commit. */
export function effectOf(policy: AgentPolicy, proposal: Proposal): EffectPolicy {
  const effect = policy.effects.find((e) => e.name === proposal.effect);
  if (effect) return effect;
  throw ApplicationFailure.create({
    message: `agent "${policy.name}" has no effect named "${proposal.effect}"`,
    type: FailureType.UnknownEffect,
    nonRetryable: true,
  });
}

/** The end of a commit whose next effect the toolCalls budget cannot fund, with what it had staged and done. */
export const budgetStop = (effect: EffectPolicy, preserved: Record<string, unknown>): RunOutcome => ({
  reason: 'budget_exhausted',
  summary: `stopped before effect ${effect.name}: the toolCalls budget would be crossed`,
  output: { dimension: 'toolCalls', ...preserved },
});

/** The run an effect belongs to, as the commit activities take it. */
export const effectRun = (input: RunInput): Pick<RunInput, 'runKey' | 'wakeKey' | 'entity' | 'eventKey'> => ({
  runKey: input.runKey,
  wakeKey: input.wakeKey,
  entity: input.entity,
  eventKey: input.eventKey,
});
