import type { AgentPolicy } from '../../src/core/policy';
import type { ShadowEffect } from '../../src/core/contracts';
import { effectKey } from '../../src/core/ids';
import type { RunInput } from '../../src/core/run-types';
import { reserve, settle, type BudgetPool } from '../../src/core/budget';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import { budgetStop, effectOf, effectRun, type Staged } from './staged';
import { recordEffect } from './proxies';
import { timeLeftMs } from '../shared/deadline';

/**
 * A shadow run's commit stage (origin `shadow`): every staged effect in order, under the shadow run's
 * own effect key, checked against its schema and recorded with what the commit stage would have done
 * (`recordEffect`), and none carried out: no `apply`, no `find`, no provider. An irreversible effect
 * waits for no person (the record says a real run would have). The budget is charged as a real
 * commit would charge it, so a shadow run stops where the real one would. Arguments its schema
 * refuses fail the run as they would a real one.
 */
export async function recordEffects(input: RunInput, policy: AgentPolicy, state: RunState, pool: BudgetPool, staged: Staged): Promise<RunOutcome> {
  const { answer, proposals } = staged;
  const recorded: ShadowEffect[] = [];
  const preserved = () => ({ answer, staged: proposals, committed: [], shadow: recorded });
  for (const [step, proposal] of proposals.entries()) {
    const effect = effectOf(policy, proposal);
    timeLeftMs(state.deadlineMs); // none recorded once the run's wall-clock budget is spent (it ends `budget_exhausted`)
    const r = reserve(pool, { toolCalls: 1 });
    if (!r.ok) return budgetStop(effect, preserved());
    const run = effectRun(input);
    const wouldAwaitApproval = !effect.reversible && policy.approval.irreversible === 'required';
    recorded.push(
      await recordEffect({
        agent: policy.name,
        agentVersion: policy.version,
        effectKey: effectKey(input.runKey, effect.name, step),
        effect,
        args: proposal.args,
        run,
        wouldAwaitApproval,
      }),
    );
    settle(pool, r.charge, r.charge);
  }
  return { reason: 'success', summary: staged.summary, output: preserved() };
}
