import { jsonBytes } from '../../src/core/bytes';
import { CARRIED_BUDGET_BYTES } from '../../src/core/coalesce-carried';
import type { CoalescerInput } from '../../src/core/coalesce-types';
import type { CoalescerMachine } from './machine';

export { CARRIED_BUDGET_BYTES } from '../../src/core/coalesce-carried';

/*
 * What a coalescer's continue-as-new carries (src/core/coalesce-carried.ts says where the room goes):
 * the live run's events (a redelivery of one is answered as the run's whatever the seen table still
 * holds), the seen table packed, and the whole within CARRIED_BUDGET_BYTES by construction: the seen
 * table takes what the rest leaves.
 */

/**
 * The continue-as-new input: the state with the seen table packed, at most CARRIED_BUDGET_BYTES of JSON. The seen table takes what the rest
 * leaves, up to its own budget: past it, its oldest entries go early (counted in `forgottenEarly`,
 * `seenFloorMs`). Measured as written, so the bound holds whatever the shares' estimates miss.
 */
export function carriedInput(self: Pick<CoalescerInput, 'agent' | 'wakeKey' | 'policy'>, machine: CoalescerMachine): CoalescerInput {
  const { state, seen: table } = machine;
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
