import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentPolicy } from '../../agents/policy';
import type { AgentRegistry } from '../../agents/registry';
import type { CommitActivities, EffectOutcome, EffectRequest } from '../../workflows/contracts';
import { FailureType } from '../../workflows/failures';
import { agentOf } from '../run';
import { withHeartbeat } from '../heartbeat';
import type { ChannelAdapter } from './channel';
import type { ExportAdapter } from './exports';
import type { PullRequestAdapter } from './pulls';

export interface EffectAdapters {
  channel: ChannelAdapter;
  exports: ExportAdapter;
  pulls: PullRequestAdapter;
}

/**
 * Refuse at worker start an agent whose `provider_key` effect would go to an adapter that ignores
 * idempotency keys (e.g. a Slack webhook): that would be a silent duplicate on retry.
 */
export function checkAdapters(agents: Readonly<Record<string, { policy: AgentPolicy }>>, adapters: EffectAdapters): void {
  for (const { policy: agent } of Object.values(agents)) {
    for (const e of agent.effects) {
      if (e.class === 'provider_key' && e.kind === 'channel_post' && !adapters.channel.keyed) {
        throw new Error(
          `agent "${agent.name}" effect "${e.name}" is provider_key, but the configured channel adapter takes no idempotency key; ` +
            `use WAKEGATE_CHANNEL_ADAPTER=local|http or declare the effect reconcile with a searchable provider`,
        );
      }
    }
  }
}

type Base = Pick<EffectOutcome, 'effectKey' | 'name' | 'class' | 'attempt'>;
type Committer<K extends EffectRequest['kind']> = (r: Extract<EffectRequest, { kind: K }>, base: Base, signal: AbortSignal) => Promise<EffectOutcome>;

/** How each kind of provider is committed to, under its class's rule. */
function committers(adapters: EffectAdapters): { [K in EffectRequest['kind']]: Committer<K> } {
  return {
    // Idempotent by construction: the branch is the key, opening it again finds the open PR.
    pull_request: async (r, base, signal) => {
      const pr = await adapters.pulls.open(r, signal);
      return { ...base, outcome: pr.existed ? 'already_applied' : 'applied', ref: pr.ref };
    },
    // Provider key: the effect key goes as Idempotency-Key and the provider deduplicates.
    channel_post: async (r, base, signal) => {
      const m = await adapters.channel.post(base.effectKey, r.text, signal);
      return { ...base, outcome: m.replayed ? 'already_applied' : 'applied', ref: m.ref };
    },
    // Reconcile: no key at the provider, so a retry looks the effect up by its key first.
    export_start: async (r, base, signal) => {
      if (base.attempt > 1) {
        // An earlier attempt may have landed and lost its answer (a crash, a timeout): look first.
        let found: { ref: string } | undefined;
        try {
          found = await adapters.exports.find(base.effectKey, signal);
        } catch (err) {
          throw ApplicationFailure.nonRetryable(
            `cannot tell whether effect ${base.effectKey} landed (attempt ${base.attempt}): ${(err as Error).message}`,
            FailureType.EffectAmbiguous,
          );
        }
        if (found) return { ...base, outcome: 'reconciled_landed', ref: found.ref };
        const job = await adapters.exports.start(base.effectKey, r.campaign, signal);
        return { ...base, outcome: 'reconciled_redone', ref: job.ref };
      }
      const job = await adapters.exports.start(base.effectKey, r.campaign, signal);
      return { ...base, outcome: 'applied', ref: job.ref };
    },
  };
}

/** The commit activity: builds one effect's request with the agent's own builder and carries it out under its class's rule. */
export function createCommitActivity(agents: AgentRegistry, adapters: EffectAdapters): CommitActivities {
  const byKind = committers(adapters);
  return {
    /**
     * Carry out one effect, safe to retry under its class: `idempotent` redoes harmlessly,
     * `provider_key` sends the effect key as `Idempotency-Key`, `reconcile` looks the effect up by
     * key on every retry attempt first. Fails non-retryably with `EffectAmbiguous` when a retry
     * cannot tell whether the earlier attempt landed: the run escalates instead of guessing.
     */
    async commitEffect(input) {
      const { attempt } = activityInfo();
      const build = agentOf(agents, input.agent).requests[input.effect.name];
      if (!build) throw ApplicationFailure.nonRetryable(`agent "${input.agent}" has no effect named "${input.effect.name}"`, FailureType.UnknownEffect);
      const request = build({ input: input.input, final: input.final });
      const base = { effectKey: input.effectKey, name: input.effect.name, class: input.effect.class, attempt };
      const commit = byKind[request.kind] as Committer<typeof request.kind>;
      const outcome = await withHeartbeat((signal) => commit(request, base, signal));
      log.info('effect committed', { ...outcome });
      return outcome;
    },
  };
}
