import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { agentNamed, type AgentRegistry } from '../../src/agents/registry';
import type { EffectContext, EffectDefinition, EffectReceipt } from '../../src/agents/types';
import type { OutsideConfig } from '../../src/config/config';
import type { CommitActivities, EffectOutcome, ShadowEffect } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';
import { parseArgs } from '../../src/core/args';
import { withHeartbeat } from '../shared/heartbeat';

/**
 * Refuse at worker start an agent whose `provider_key` effect goes to a provider that declares it
 * ignores idempotency keys (e.g. a Slack webhook): that would be a silent duplicate on retry.
 */
export function checkEffects(agents: AgentRegistry, outside: OutsideConfig): void {
  for (const agent of Object.values(agents)) {
    for (const e of Object.values(agent.effects) as EffectDefinition[]) {
      if (e.class === 'provider_key' && e.keyed && !e.keyed(outside)) {
        throw new Error(
          `agent "${agent.policy.name}" effect "${e.name}" is provider_key, but its configured provider takes no idempotency key; ` +
            'configure a provider that honours the key, or declare the effect reconcile (with find) against a searchable one',
        );
      }
    }
  }
}

type Outcome = EffectOutcome['outcome'];

/**
 * Each class's rule, written once for every effect:
 * - `idempotent`: redo it; redoing changes nothing.
 * - `provider_key`: pass the effect key; the provider deduplicates.
 * - `reconcile`: look first, always: landed → recorded, absent → applied, the look-up fails →
 *   non-retryable `EffectAmbiguous` (the run escalates; it never guesses). Not only a retry attempt
 *   may follow one that landed: a failed run started again by a redelivery, a run reset from the Web
 *   UI and a replay all commit under keys an earlier execution may have used, and nothing in the
 *   activity tells them from a first execution, so the look costs one `find` on every commit.
 */
export async function byClass(
  effect: EffectDefinition,
  args: Record<string, unknown>,
  ctx: EffectContext,
  reexecution = false,
): Promise<{ receipt: EffectReceipt; outcome: Outcome }> {
  const applied = (r: EffectReceipt, fresh: Outcome) => ({ receipt: r, outcome: r.existed ? ('already_applied' as const) : fresh });
  if (effect.class !== 'reconcile') return applied(await effect.apply(args, ctx), 'applied');
  let found: EffectReceipt | undefined;
  try {
    found = await effect.find!(ctx);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(
      `cannot tell whether effect ${ctx.effectKey} landed (attempt ${ctx.attempt}): ${(err as Error).message}`,
      FailureType.EffectAmbiguous,
    );
  }
  if (found) return { receipt: found, outcome: 'reconciled_landed' };
  return applied(await effect.apply(args, ctx), ctx.attempt === 1 && !reexecution ? 'applied' : 'reconciled_redone');
}

/** What the commit stage does with an effect of each class (see `byClass`), in words, for a shadow run's record. */
const WOULD_DO: Record<EffectDefinition['class'], (key: string) => string> = {
  idempotent: () => 'apply it (idempotent: a retry redoes it)',
  provider_key: (key) => `apply it with idempotency key ${key} (the provider deduplicates)`,
  reconcile: (key) => `look for what an earlier attempt or execution under ${key} did, then apply it if nothing landed`,
};

/** The commit activity: carries out one staged effect with the agent's own code, under its class's rule. */
/** The named agent's effect, or the non-retryable failure that says which of the two is unknown. */
function effectOf(agents: AgentRegistry, agent: string, name: string, version?: string): EffectDefinition {
  const def = agentNamed(agents, agent, version);
  const effect = def.effects[name] as EffectDefinition | undefined;
  if (!effect) throw ApplicationFailure.nonRetryable(`agent "${agent}" has no effect named "${name}"`, FailureType.UnknownEffect);
  return effect;
}

export function createCommitActivity(agents: AgentRegistry, outside: OutsideConfig): CommitActivities {
  return {
    /**
     * Carry out one effect, safe to retry under its class (see `byClass`). Its arguments are checked
     * against its schema again here. Fails non-retryably with `EffectAmbiguous` when a retry cannot
     * tell whether the earlier attempt landed: the run escalates instead of guessing.
     */
    async commitEffect(input) {
      const { attempt, workflowExecution } = activityInfo();
      if (input.reset && input.reset.slotsReadFor !== workflowExecution?.runId)
        throw ApplicationFailure.nonRetryable(
          `effect "${input.effect.name}" not carried out: this execution was reset past its first step, so its effect keys were not read across the run's other executions (a key another execution moved could be used again). Reset it to its first workflow task, or redeliver or replay its event.`,
          FailureType.ResetPastStart,
        );
      const effect = effectOf(agents, input.agent, input.effect.name, input.agentVersion);
      const args = parseArgs(input.args, effect.input);
      if (!args.ok) throw ApplicationFailure.nonRetryable(`effect "${effect.name}": ${args.problem}`, FailureType.InvalidArguments);
      const { receipt, outcome } = await withHeartbeat((signal) =>
        byClass(
          effect,
          args.args,
          { effectKey: input.effectKey, attempt, signal, run: { ...input.run, agent: input.agent }, outside },
          input.replayOf !== undefined,
        ),
      );
      const result: EffectOutcome = { effectKey: input.effectKey, name: effect.name, class: effect.class, outcome, ref: receipt.ref, attempt };
      log.info('effect committed', { ...result });
      return result;
    },

    /**
     * A shadow run's effect: its arguments checked against its schema as `commitEffect` checks them,
     * and what the commit stage would do with it under its class's rule. Calls no `apply`, no `find`,
     * no provider.
     */
    async recordEffect(input) {
      const effect = effectOf(agents, input.agent, input.effect.name, input.agentVersion);
      const args = parseArgs(input.args, effect.input);
      if (!args.ok) throw ApplicationFailure.nonRetryable(`effect "${effect.name}": ${args.problem}`, FailureType.InvalidArguments);
      const rule = WOULD_DO[effect.class](input.effectKey);
      const result: ShadowEffect = {
        effectKey: input.effectKey,
        name: effect.name,
        class: effect.class,
        reversible: effect.reversible,
        args: args.args,
        wouldDo: input.wouldAwaitApproval ? `wait for a person's approval, then ${rule}` : rule,
        wouldAwaitApproval: input.wouldAwaitApproval,
      };
      log.info('shadow effect recorded', { effectKey: input.effectKey, name: effect.name });
      return result;
    },
  };
}
