import { MAX_HOLD_MS, type UnusedPermits } from '../../core/permit-types';
import { takeFrom } from './sliding-window';
import { FLEET, capSeries, capsOf, type MachineState, type Turn } from './state';

/*
 * Permits leased ahead of demand (a block): counted in every window at lease time, so no holder can
 * take the fleet past a cap whatever it does with them. The machine remembers, per holder, what
 * each block may still hand back and until when; a return takes the unused permits out of the
 * windows again. A block not returned by its `untilMs` (its process died, the signal was lost) is
 * forgotten and stays counted until the windows slide past it: conservative.
 */

/** A returned permit may come this long after its holder's own deadline (clocks and a signal's way differ). */
export const RETURN_GRACE_MS = 5_000;

/** Remember that `holder` holds `n` prefetched permits of `agent`, counted at `nowMs`. */
export function recordBlock(turn: Turn, holder: string, agent: string, n: number, holdMs: number | undefined): void {
  const { m, nowMs } = turn;
  const held = ((m.blocks ??= {})[holder] ??= []);
  const untilMs = nowMs + Math.min(MAX_HOLD_MS, Math.max(0, holdMs ?? MAX_HOLD_MS)) + RETURN_GRACE_MS;
  const same = held.find((b) => b.agent === agent && b.atMs === nowMs);
  if (same) Object.assign(same, { n: same.n + n, untilMs: Math.max(same.untilMs, untilMs) });
  else held.push({ agent, atMs: nowMs, n, untilMs });
}

/** Forget the blocks past their `untilMs` (their permits stay counted), and the holders left with none. */
export function forgetExpired(m: MachineState, nowMs: number): void {
  if (!m.blocks) return;
  for (const [holder, held] of Object.entries(m.blocks)) {
    const live = held.filter((b) => b.untilMs >= nowMs && b.n > 0);
    if (live.length) m.blocks[holder] = live;
    else delete m.blocks[holder];
  }
  if (!Object.keys(m.blocks).length) delete m.blocks;
}

/**
 * A holder hands back permits it did not use: each is taken out of the windows it was counted in,
 * up to what that block still holds (a duplicate or a return for a forgotten block takes nothing).
 * Runs held on a cap that the return may have made room under are nudged to re-check.
 */
export function returnUnused(turn: Turn, { holder, blocks }: UnusedPermits): void {
  const { m, nowMs } = turn;
  forgetExpired(m, nowMs);
  const held = m.blocks?.[holder];
  if (!held || !Array.isArray(blocks)) return;
  const credited = new Set<string>();
  for (const r of blocks) {
    const block = held.find((b) => b.agent === r.agent && b.atMs === r.atMs);
    const n = block ? Math.min(block.n, Math.max(0, Math.floor(r.n))) : 0;
    if (!block || !n) continue;
    block.n -= n;
    for (const { scope, cap } of capsOf(m.policy, r.agent)) if (cap.wakes !== undefined) takeFrom(capSeries(m, scope, cap, 'permits'), r.atMs, n, nowMs);
    credited.add(r.agent);
  }
  forgetExpired(m, nowMs);
  if (!credited.size || m.visibilityError?.unavailable) return;
  for (const [agent, hold] of Object.entries(m.capHolds)) {
    if (hold.scope === FLEET || credited.has(hold.scope)) turn.actions.push({ kind: 'nudge', agent });
  }
}
