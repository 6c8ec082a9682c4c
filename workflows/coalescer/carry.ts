import { jsonBytes } from '../../src/core/bytes';
import { charsOf, whole, type OfferedEvent } from '../../src/core/coalesce-batch';
import { CARRIED_BUDGET_BYTES, SEEN_LEAST_SHARE } from '../../src/core/coalesce-carried';
import type { CoalescerInput, CoalescerState, KeptEvent } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import type { CoalescerMachine } from './machine';

export { CARRIED_BUDGET_BYTES } from '../../src/core/coalesce-carried';

/*
 * What a coalescer's continue-as-new carries (src/core/coalesce-carried.ts says where the room goes):
 * the pending batch whole, the live run's and the foreign runs' events by their keys where nothing
 * after the run's start needs the rest (a redelivery of one is answered as its run's whatever the
 * seen table still holds), the seen table packed: it takes what the rest leaves, never less than
 * SEEN_LEAST_SHARE.
 */

type Run = NonNullable<CoalescerState['running']>;

/**
 * An event by its key, its inputs' fingerprint and its first delivery id: what a redelivery of it and
 * its run's end read. The run took every id at its start and records later deliveries itself; a
 * redelivery adds none to a started run's copy (answers.ts `heldAnswer`).
 */
const keptOf = ({ eventKey, fingerprint, deliveryIds }: OfferedEvent | KeptEvent): KeptEvent => ({
  eventKey,
  fingerprint,
  deliveryIds: deliveryIds.slice(0, 1),
});

/** A run's events by their keys, but its steered ones (its end may send them to the follow-up run); its list counted as it was. */
function kept(run: Run): Run {
  const steered = new Set(run.steered ?? []);
  return { ...run, chars: charsOf(run), events: run.events.map((e) => (steered.has(e.eventKey) && whole(e) ? e : keptOf(e))) };
}

/**
 * The runs as a continue-as-new carries them: the live run's events and the foreign runs' (live runs
 * of chains terminated by hand) kept by their keys ({@link kept}), but under overlap `cancel` the live
 * run's whole while a restart may still take them (no restart asked for, and no batch waiting: one
 * would take the next event instead). The machine's own state is left as it is.
 */
export function carriedRuns(state: CoalescerState, policy: CoalescePolicy): Pick<CoalescerState, 'running' | 'foreign'> {
  const { running, foreign, pending } = state;
  const restartable = policy.whileRunning === 'cancel' && !running?.cancelRequested && !pending;
  return {
    ...(running && !restartable ? { running: kept(running) } : {}),
    ...(foreign?.length ? { foreign: foreign.map(kept) } : {}),
  };
}

/**
 * The continue-as-new input: the state with {@link carriedRuns}, and the seen table packed, at most
 * CARRIED_BUDGET_BYTES of JSON. The table takes what the rest leaves, up to its own budget and never
 * under SEEN_LEAST_SHARE: past what it takes, its oldest entries go early (counted in
 * `forgottenEarly`, `seenFloorMs`). Measured as written, so the bound holds whatever the shares'
 * estimates miss, but where the rest outgrows it with the table at its least share (the case
 * src/core/coalesce-carried.ts states, under Temporal's 2 MiB).
 */
export function carriedInput(self: Pick<CoalescerInput, 'agent' | 'wakeKey' | 'policy'>, machine: CoalescerMachine): CoalescerInput {
  const { seen: table } = machine;
  const runs = carriedRuns(machine.state, self.policy);
  const rest = jsonBytes({ ...self, state: { ...machine.state, ...runs, seen: [], seenOpeners: {} } });
  table.bound(Math.max(SEEN_LEAST_SHARE, CARRIED_BUDGET_BYTES - rest));
  for (;;) {
    const { seen, seenOpeners } = table.packed();
    const state = { ...machine.state, ...runs, seen, seenOpeners };
    const input: CoalescerInput = { agent: self.agent, wakeKey: self.wakeKey, policy: self.policy, state };
    const over = jsonBytes(input) - CARRIED_BUDGET_BYTES;
    if (over <= 0 || table.packedChars <= SEEN_LEAST_SHARE) return input;
    table.bound(Math.max(SEEN_LEAST_SHARE, table.packedChars - over));
  }
}
