import { ActivityFailure, ApplicationFailure, CancellationScope, condition, sleep } from '@temporalio/workflow';
import type { AgentPolicy } from '../../src/core/policy';
import { FailureType } from '../../src/core/failures';
import { runEffectKey } from '../../src/core/effect-slots';
import type { RunInput } from '../../src/core/run-types';
import { commitEffectOf } from './proxies';
import { recordEffects } from './record-only';
import { budgetStop, effectOf, effectRun, type Staged } from './staged';
import { reserve, settle, type BudgetPool } from '../../src/core/budget';
import { DeadlinePassed, timeLeftMs } from '../shared/deadline';
import type { RunOutcome, RunState } from '../../src/core/run-state';

function failureType(err: unknown): string | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : undefined;
}

export type { Staged };

/**
 * The commit stage, the one place effects become visible: each staged effect in order, under its
 * effect key `runKey#name@step` (the run's key names the agent, so two agents woken by one event
 * never share an effect key). An irreversible effect waits for a person first, who sees its exact
 * arguments (approve → go on; reject → `blocked`; no answer within the policy's timeout →
 * `escalated`, with the staged effects and what was already committed in the result). A reconcile
 * effect that cannot tell whether it landed escalates; it never guesses. A run cancelled here lets
 * the effect in flight finish and records it; nothing after it starts.
 */
export async function commitEffects(input: RunInput, policy: AgentPolicy, state: RunState, pool: BudgetPool, staged: Staged): Promise<RunOutcome> {
  if (input.origin.kind === 'shadow') return recordEffects(input, policy, state, pool, staged);
  state.commitBegan = true; // from here a supersede (overlap `cancel`) lets the run finish
  const { answer, proposals } = staged;
  const preserved = () => ({ answer, staged: proposals, committed: state.effects });
  // A replay of a recorded run commits under that run's effect keys: what the original landed is found, not done twice.
  const replayOf = input.replay ? { replayOf: input.replay.of } : {};
  // A reset execution: which run read its slots (the commit activity refuses an effect whose were read for another).
  const resetOf = input.reset ? { reset: { ...(input.reset.readFor ? { slotsReadFor: input.reset.readFor } : {}) } } : {};
  for (const [step, proposal] of proposals.entries()) {
    const effect = effectOf(policy, proposal);
    // A cancelled run starts no further effect, nor its approval wait (the scope throws its cancellation here).
    if (CancellationScope.current().consideredCancelled) await CancellationScope.current().cancelRequested;
    // Nor once the run's wall-clock budget is spent: the run ends `budget_exhausted` (agent-loop.ts), as a
    // deadline met while the effect before was in flight always ended it (that effect was let finish).
    const leftMs = timeLeftMs(state.deadlineMs) ?? Infinity;
    const key = runEffectKey(input, proposals, step);
    if (!effect.reversible && policy.approval.irreversible === 'required') {
      state.phase = 'awaiting_approval';
      // Keep a decision already recorded: replaying from scratch, the update that decided may be
      // delivered in the same activation before the step that set `pending` (it was validated against
      // `pending` when it first ran). Overwriting it here was a non-determinism the crash tests found.
      state.approval = { ...state.approval, pending: { effectKey: key, effect: effect.name, summary: staged.summary, args: proposal.args } };
      // A timer that is never cancelled, not condition(fn, timeout): in that replay order the decision
      // is already there, and a timer started and cancelled in one activation would leave no
      // TimerStarted event where the original run recorded one. One timer, for the approval's timeout
      // or the run's deadline, whichever comes first: the run's only timer, while a person is awaited.
      const deadlineFirst = leftMs <= policy.approval.timeoutMs;
      let timedOut = false;
      sleep(deadlineFirst ? leftMs : policy.approval.timeoutMs).then(
        () => (timedOut = true),
        () => undefined, // cancelled with the run (kill)
      );
      await condition(() => state.approval.decision !== undefined || timedOut);
      const decision = state.approval.decision;
      const decided = decision !== undefined;
      // The deadline came first: the run ends `budget_exhausted`, still `awaiting_approval` (agent-loop.ts).
      if (!decided && deadlineFirst) throw new DeadlinePassed();
      state.approval.pending = undefined;
      if (!decided || !decision) {
        return {
          reason: 'escalated',
          summary: `no decision on irreversible effect ${effect.name} within ${policy.approval.timeoutMs} ms; handed to a person`,
          output: { ...preserved(), awaiting: { effectKey: key, effect: effect.name } },
        };
      }
      if (!decision.approved) {
        return {
          reason: 'blocked',
          summary: `${decision.who} rejected ${effect.name}${decision.reason ? `: ${decision.reason}` : ''}`,
          output: { ...preserved(), decision },
        };
      }
      state.approval = {}; // consumed: a later irreversible effect needs its own decision
      state.phase = 'committing';
    }
    const r = reserve(pool, { toolCalls: 1 });
    if (!r.ok) return budgetStop(effect, preserved());
    try {
      // An effect in flight when the run is cancelled (kill, halt, supersede) or meets its deadline is let finish
      // rather than cut off halfway, where no one could say whether it landed: its outcome is
      // recorded (`committed`), and the cancellation stops the run before the next effect starts.
      const run = effectRun(input);
      const outcome = await CancellationScope.nonCancellable(() =>
        commitEffectOf(effect)({ agent: policy.name, agentVersion: policy.version, effectKey: key, effect, args: proposal.args, run, ...replayOf, ...resetOf }),
      );
      state.effects.push(outcome);
      state.maxAttempt = Math.max(state.maxAttempt, outcome.attempt);
    } catch (err) {
      if (failureType(err) === FailureType.EffectAmbiguous) {
        return {
          reason: 'escalated',
          summary: `cannot tell whether ${effect.name} landed; a person must check ${key}`,
          output: { ...preserved(), ambiguous: { effectKey: key, effect: effect.name, detail: (err as ActivityFailure).cause?.message } },
        };
      }
      throw err;
    } finally {
      settle(pool, r.charge, r.charge);
    }
  }
  return { reason: 'success', summary: staged.summary, output: preserved() };
}
