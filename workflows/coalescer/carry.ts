import { jsonBytes } from '../../src/core/bytes';
import { charsOf } from '../../src/core/coalesce-batch';
import { CARRIED_BUDGET_BYTES } from '../../src/core/coalesce-carried';
import type { CoalescerInput, CoalescerState } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import type { CoalescerMachine } from './machine';

export { CARRIED_BUDGET_BYTES } from '../../src/core/coalesce-carried';

/*
 * What a coalescer's continue-as-new carries (src/core/coalesce-carried.ts says where the room goes):
 * the live run's events only where something after its start needs them, the seen table packed, and
 * the whole within CARRIED_BUDGET_BYTES by construction: the seen table takes what the rest leaves.
 */

/**
 * Before a continue-as-new, a live run's events stay behind (its input holds them; the seen table
 * answers their redeliveries, answers.ts `liveAnswer`), except those something still needs: under
 * overlap `cancel`, all of them until a restart takes them (then their keys, which that restart drops
 * once the run says it committed); under `steer`, the steered ones (those its model never saw go to
 * the follow-up run). Adopted runs of chains terminated by hand (`foreign`) keep their steered ones.
 * How many stayed behind is kept (`left`), so the run's list is still counted whole (`hasRoom`).
 */
export function leaveBehind(state: CoalescerState, policy: CoalescePolicy): void {
  for (const run of [state.running, ...(state.foreign ?? [])]) {
    if (!run) continue;
    const live = run === state.running;
    if (live && policy.whileRunning === 'cancel' && !run.cancelRequested) continue;
    const steered = new Set(run.steered ?? []);
    const gone = run.events.filter((e) => !steered.has(e.eventKey));
    charsOf(run); // the run's list as counted so far: events that stay behind still count
    run.left = (run.left ?? 0) + gone.length;
    if (live && policy.whileRunning === 'cancel') run.leftKeys = [...(run.leftKeys ?? []), ...gone.map((e) => e.eventKey)];
    if (gone.length) run.events = run.events.filter((e) => steered.has(e.eventKey));
  }
}

/**
 * The continue-as-new input: the state with the live run's events left behind ({@link leaveBehind})
 * and the seen table packed, at most CARRIED_BUDGET_BYTES of JSON. The seen table takes what the rest
 * leaves, up to its own budget: past it, its oldest entries go early (counted in `forgottenEarly`,
 * `seenFloorMs`). Measured as written, so the bound holds whatever the shares' estimates miss.
 */
export function carriedInput(self: Pick<CoalescerInput, 'agent' | 'wakeKey' | 'policy'>, machine: CoalescerMachine): CoalescerInput {
  const { state, seen: table } = machine;
  leaveBehind(state, self.policy);
  const rest = jsonBytes({ ...self, state: { ...state, seen: [], seenOpeners: {} } });
  table.bound(CARRIED_BUDGET_BYTES - rest);
  for (;;) {
    const { seen, seenOpeners } = table.packed();
    const input: CoalescerInput = { agent: self.agent, wakeKey: self.wakeKey, policy: self.policy, state: { ...state, seen, seenOpeners } };
    const over = jsonBytes(input) - CARRIED_BUDGET_BYTES;
    if (over <= 0 || table.size === 0) return input;
    table.bound(table.packedChars - over);
  }
}
