import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../core/failures';
import { shadowAgentName } from '../core/shadow';
import type { AgentDefinition } from './types';
import { DEFAULT_VERSION } from '../core/rollout';

/** Agents by name. */
export type AgentRegistry = Readonly<Record<string, AgentDefinition>>;

/**
 * The agents a worker runs: every agent, and each live shadow's candidate under its shadow name
 * (`<agent>/shadow`, src/core/shadow.ts) with that name and no shadow of its own. Made once, when
 * the worker's activities are made, so a run's and an effect's activity look their agent up by name
 * and nothing more.
 */
export function withShadows(agents: AgentRegistry): AgentRegistry {
  const all: Record<string, AgentDefinition> = { ...agents };
  for (const [agent, def] of Object.entries(agents)) {
    const candidate = def.shadow?.candidate;
    if (!candidate) continue;
    const name = shadowAgentName(agent);
    const { shadow: _own, ...policy } = candidate.policy;
    const { shadow: _its, ...rest } = candidate;
    all[name] = { ...rest, policy: { ...policy, name } };
  }
  return all;
}

/** An agent's versions: the one its definition is (every wake's unless a rollout says otherwise), and the others it lists. */
export function agentVersions(def: AgentDefinition): { current: string; others: string[] } {
  return { current: def.policy.version ?? DEFAULT_VERSION, others: Object.keys(def.versions ?? {}) };
}

/**
 * The definition of `version` of `def` (its own when `version` is absent or its own), or undefined
 * when the worker does not have that version.
 */
export function versionOf(def: AgentDefinition, version: string | undefined): AgentDefinition | undefined {
  if (version === undefined || version === (def.policy.version ?? DEFAULT_VERSION)) return def;
  return def.versions?.[version];
}

/**
 * The named agent at the version the run is pinned to (a live shadow's name is its candidate:
 * `withShadows`), or a non-retryable UnknownAgent failure naming what this worker has.
 */
export function agentNamed(agents: AgentRegistry, name: string, version?: string): AgentDefinition {
  const def = agents[name];
  if (!def) throw ApplicationFailure.nonRetryable(`no agent named "${name}" is defined in this worker`, FailureType.UnknownAgent);
  const pinned = versionOf(def, version);
  if (!pinned) {
    const { current, others } = agentVersions(def);
    throw ApplicationFailure.nonRetryable(
      `agent "${name}" has no version "${version}" in this worker (it has ${[current, ...others].join(', ')}): keep a version in the deployment until its runs have closed`,
      FailureType.UnknownAgent,
    );
  }
  return pinned;
}

/** What is wrong with `other` as the `i`th of `def`'s other versions, or undefined (`defineAgent` checks each). */
export function versionProblem(def: { name: string; version: string; versions: AgentDefinition[] }, other: AgentDefinition, i: number): string | undefined {
  if (other.policy.name !== def.name) return `it defines "${other.policy.name}": a version of "${def.name}" has the same name`;
  if (other.policy.version === def.version) return `it is version "${def.version}" too: each version needs its own name`;
  if (def.versions.findIndex((o) => o.policy.version === other.policy.version) !== i) return `version "${other.policy.version}" is listed twice`;
  if (other.versions && Object.keys(other.versions).length)
    return `version "${other.policy.version}" lists versions of its own: list every version on the one the app exports`;
  return undefined;
}
