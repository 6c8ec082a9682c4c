import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentPolicy, EffectPolicy } from '../../agents/policy';
import { withHeartbeat } from '../heartbeat';
import type { ChannelAdapter } from './channel';
import type { ExportAdapter } from './exports';
import type { PullRequestAdapter } from './pulls';

export type EffectRequest =
  | { kind: 'channel_post'; text: string }
  | { kind: 'export_start'; campaign: string }
  | { kind: 'pull_request'; repo: string; branch: string; title: string; body: string };

export interface CommitInput {
  /** From gate/keys.ts `effectKey()`: stable across retries and replays. */
  effectKey: string;
  effect: EffectPolicy;
  request: EffectRequest;
}

/**
 * What happened at the provider: `applied` (first time), `already_applied` (the provider or the
 * natural key said it was there), `reconciled_landed` (a retry found the earlier attempt's effect
 * and recorded it), `reconciled_redone` (a retry found nothing and did it).
 */
export interface EffectOutcome {
  effectKey: string;
  name: string;
  class: EffectPolicy['class'];
  outcome: 'applied' | 'already_applied' | 'reconciled_landed' | 'reconciled_redone';
  ref: string;
  attempt: number;
}

export interface EffectAdapters {
  channel: ChannelAdapter;
  exports: ExportAdapter;
  pulls: PullRequestAdapter;
}

/**
 * Refuse at worker start an agent whose `provider_key` effect would go to an adapter that ignores
 * idempotency keys (e.g. a Slack webhook): that would be a silent duplicate on retry.
 */
export function checkAdapters(agents: Readonly<Record<string, AgentPolicy>>, adapters: EffectAdapters): void {
  for (const agent of Object.values(agents)) {
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

/** The commit activity: carries out one effect under its class's rule. */
export function createCommitActivity(adapters: EffectAdapters) {
  return {
    /**
     * Carry out one effect, safe to retry under its class: `idempotent` redoes harmlessly,
     * `provider_key` sends the effect key as `Idempotency-Key`, `reconcile` looks the effect up by
     * key on every retry attempt first. Fails non-retryably with `EffectAmbiguous` when a retry
     * cannot tell whether the earlier attempt landed: the run escalates instead of guessing.
     */
    async commitEffect(input: CommitInput): Promise<EffectOutcome> {
      const { attempt } = activityInfo();
      const base = { effectKey: input.effectKey, name: input.effect.name, class: input.effect.class, attempt };
      const r = input.request;
      const outcome = await withHeartbeat(async (signal): Promise<EffectOutcome> => {
        switch (r.kind) {
          case 'pull_request': {
            const pr = await adapters.pulls.open(r, signal);
            return { ...base, outcome: pr.existed ? 'already_applied' : 'applied', ref: pr.ref };
          }
          case 'channel_post': {
            const m = await adapters.channel.post(input.effectKey, r.text, signal);
            return { ...base, outcome: m.replayed ? 'already_applied' : 'applied', ref: m.ref };
          }
          case 'export_start': {
            if (attempt > 1) {
              // An earlier attempt may have landed and lost its answer (a crash, a timeout): look first.
              let found: { ref: string } | undefined;
              try {
                found = await adapters.exports.find(input.effectKey, signal);
              } catch (err) {
                throw ApplicationFailure.nonRetryable(
                  `cannot tell whether effect ${input.effectKey} landed (attempt ${attempt}): ${(err as Error).message}`,
                  'EffectAmbiguous',
                );
              }
              if (found) return { ...base, outcome: 'reconciled_landed', ref: found.ref };
              const job = await adapters.exports.start(input.effectKey, r.campaign, signal);
              return { ...base, outcome: 'reconciled_redone', ref: job.ref };
            }
            const job = await adapters.exports.start(input.effectKey, r.campaign, signal);
            return { ...base, outcome: 'applied', ref: job.ref };
          }
        }
      });
      log.info('effect committed', { ...outcome });
      return outcome;
    },
  };
}
