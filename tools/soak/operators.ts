import { beyondWakesByRule, stuckKeys, unseenAbsorbed, wakesByRule, type Accounting, type RunSeen } from './accounting';
import type { AgentRegistry } from '../../src/agents/registry';
import { OPERATOR_FAULTS, type FaultRecord, type OperatorTools } from './faults';
import { runCli, type LoadGenerator } from './load';
import { NOTES_AGENT } from './notes-agent';
import { readCoalescerOffers, readRunsGiven } from './temporal-records';
import type { Topology } from './topology';

/** What the operator faults act with, from the soak's topology and load (see FaultInjector). */
export function operatorTools(top: Topology, load: LoadGenerator, everyMs: number): OperatorTools {
  return {
    client: () => top.client(),
    taskQueue: top.taskQueue,
    everyMs,
    // An operator's command may wait on a busy server (rearm waits for the deletion to show): more time than the load's emits.
    cli: (args) => runCli(args, top.env, 180_000),
    redis: () => top.redis(),
    notes: () => load.notes,
  };
}

/**
 * The operator accounting, read from Temporal after the drain (the bound after the load stops):
 * wake keys whose last accepted event no closed run took, and events runs list as absorbed that their
 * model never saw (see tools/soak/accounting.ts `stuckKeys`, `unseenAbsorbed`); and `result.doubleAbsorbed`
 * narrowed to the events taken by more runs than they made wakes by rule (`wakesByRule`).
 */
export async function operatorFindings(
  top: Topology,
  closed: RunSeen[],
  agents: AgentRegistry,
  result: Pick<Accounting, 'doubleAbsorbed'>,
): Promise<{ stuck: string[]; unseen: string[] }> {
  const coalescers = await readCoalescerOffers(top.client(), top.taskQueue);
  const stuck = stuckKeys(coalescers, closed);
  const unseen = unseenAbsorbed(await readRunsGiven(top.client(), top.taskQueue, NOTES_AGENT));
  // Taken by two runs is a double only past the wakes the event made by rule (past its horizon a delivery is a new wake): `result` keeps those.
  const wakes = wakesByRule(coalescers, (agent) => agents[agent]?.policy.coalesce?.dedupHorizonMs ?? Infinity);
  result.doubleAbsorbed = beyondWakesByRule(result.doubleAbsorbed, wakes);
  return { stuck, unseen };
}

export function printOperatorFindings(faults: readonly FaultRecord[], found: { stuck: string[]; unseen: string[] }): void {
  for (const f of faults.filter((x) => (OPERATOR_FAULTS as readonly string[]).includes(x.kind)))
    console.error(`  operator ${f.kind} ${f.target}: ${f.outcome ?? ''}${f.eventKeys?.length ? ` (sent again: ${f.eventKeys.join(', ')})` : ''}`);
  console.error(`  STUCK wake keys (${found.stuck.length}): ${found.stuck.slice(0, 30).join('; ')}`);
  console.error(`  absorbed events their run's model never saw (${found.unseen.length}): ${found.unseen.slice(0, 30).join('; ')}`);
}
