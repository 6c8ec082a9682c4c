/*
 * The versions an agent's definition declares, read without depending on how they are declared
 * beyond the contract: `version` (default `v1`) and `versions`, other definitions of the agent.
 */

/** The version every wake of the agent gets with no rollout, and the other versions its workers can run. */
export function declaredVersions(def: object): { current: string; others: string[] } {
  const d = def as { version?: unknown; versions?: unknown };
  const current = typeof d.version === 'string' && d.version ? d.version : 'v1';
  const others = Array.isArray(d.versions)
    ? d.versions.map((v: unknown) => (v as { version?: unknown } | undefined)?.version).filter((v): v is string => typeof v === 'string' && v !== current)
    : [];
  return { current, others };
}
