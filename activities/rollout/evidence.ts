import type { WorkflowExecutionInfo } from '@temporalio/client';
import { SHADOW_PREFIX } from '../../src/core/ids';
import type { RolloutStats } from '../../src/core/rollout';
import { WakeCostUsd, WakeEffects, WakeTerminalReason, WakeTokens, WakeVersion } from '../../src/core/search-attributes';

/*
 * A rollout's evidence from visibility: each closed run of the agent, by the version and the figures
 * it recorded on itself in its final upsert, summed per version. Pure: the activity lists, this counts.
 */

/** One closed run as the rollout counts it. */
export interface ClosedRun {
  version: string;
  /** Its terminal reason; a run that recorded none (terminated, timed out) counts as `failed`. */
  reason: string;
  tokens: number;
  costUsd: number;
  effects: number;
}

/** A closed run's figures as it recorded them; a run that names no version ran `current`. Live shadows and skipped windows are not runs to judge. */
export function closedRunOf(info: Pick<WorkflowExecutionInfo, 'workflowId' | 'typedSearchAttributes'>, current: string): ClosedRun | undefined {
  if (info.workflowId.startsWith(SHADOW_PREFIX)) return undefined;
  const sa = info.typedSearchAttributes;
  const reason = sa.get(WakeTerminalReason) ?? 'failed';
  if (reason === 'duplicate' || reason === 'skipped') return undefined;
  return {
    version: sa.get(WakeVersion) ?? current,
    reason,
    tokens: sa.get(WakeTokens) ?? 0,
    costUsd: sa.get(WakeCostUsd) ?? 0,
    effects: sa.get(WakeEffects) ?? 0,
  };
}

const EMPTY: RolloutStats = { runs: 0, nonSuccess: 0, failures: 0, tokensPerRun: 0, usdPerRun: 0, effectsPerRun: 0 };

/** One version's figures from its closed runs: counts, and spend and effects per run (0 with no runs). */
export function statsOf(runs: ClosedRun[]): RolloutStats {
  if (!runs.length) return { ...EMPTY };
  const sum = (f: (r: ClosedRun) => number) => runs.reduce((n, r) => n + f(r), 0);
  return {
    runs: runs.length,
    nonSuccess: runs.filter((r) => r.reason !== 'success').length,
    failures: runs.filter((r) => r.reason === 'failed').length,
    tokensPerRun: sum((r) => r.tokens) / runs.length,
    usdPerRun: sum((r) => r.costUsd) / runs.length,
    effectsPerRun: sum((r) => r.effects) / runs.length,
  };
}

/** The two versions' figures; runs of any third version (an older rollout's) are left out. */
export function evidenceOf(runs: ClosedRun[], current: string, candidate: string): { current: RolloutStats; candidate: RolloutStats } {
  return { current: statsOf(runs.filter((r) => r.version === current)), candidate: statsOf(runs.filter((r) => r.version === candidate)) };
}
