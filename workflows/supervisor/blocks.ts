import { MAX_HOLD_MS, type UnusedPermits } from '../../src/core/permit-types';
import type { LeasedBlock } from '../../src/core/supervisor-types';
import { takeFrom } from './sliding-window';
import { FLEET, capSeries, capsOf, type MachineState, type Turn } from './state';

/*
 * Permits leased ahead of demand (a block): counted in every window at once, so no holder can
 * take the fleet past a cap whatever it does with them. A run may start on one up to the block's
 * hold after the lease, so the block is counted at the END of its hold (`countedAtMs`, ahead of
 * now: a window counts what lies ahead of it too): it stays counted for a whole window after the
 * last instant a run may start on it, and every span of a cap's window in which such a run can
 * start counts it. Counted at the lease instead, a run starting at the end of the hold would fall
 * in a span the window no longer counted it in (cap 20 per 60 s: 31 starts in one 60 s span).
 * The machine remembers, per holder, what each block may still hand back and until when; a return
 * takes the unused permits out of the windows again. A block not returned by its `untilMs` (its
 * process died, the signal was lost) is forgotten and stays counted until the windows slide past
 * it: conservative.
 */

/** A returned permit may come this long after its holder's own deadline (clocks and a signal's way differ). */
export const RETURN_GRACE_MS = 5_000;

/** How long a holder may keep a block leased with `holdMs` (its ask cut to MAX_HOLD_MS). */
export const holdOf = (holdMs: number | undefined): number => Math.min(MAX_HOLD_MS, Math.max(0, holdMs ?? MAX_HOLD_MS));

/** Where a block leased now with `holdMs` is counted in the windows: the end of its hold. */
export const countedAtOf = (nowMs: number, holdMs: number | undefined): number => nowMs + holdOf(holdMs);

/** Remember that `holder` holds `n` prefetched permits of `agent`, leased at `nowMs` and counted at the end of their hold. */
export function recordBlock(turn: Turn, holder: string, agent: string, n: number, holdMs: number | undefined): void {
  const { m, nowMs } = turn;
  const held = ((m.blocks ??= {})[holder] ??= []);
  const countedAtMs = countedAtOf(nowMs, holdMs);
  const untilMs = countedAtMs + RETURN_GRACE_MS;
  const same = held.find((b) => b.agent === agent && b.atMs === nowMs && countedAt(b) === countedAtMs);
  if (same) Object.assign(same, { n: same.n + n, untilMs: Math.max(same.untilMs, untilMs) });
  else held.push({ agent, atMs: nowMs, n, untilMs, ...(countedAtMs !== nowMs ? { countedAtMs } : {}) });
}

/** Where a block's permits are counted (a block recorded before `countedAtMs` existed: at its lease). */
const countedAt = (b: LeasedBlock): number => b.countedAtMs ?? b.atMs;

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
    // A return names its block by the lease time; blocks of one lease time are emptied in turn.
    let left = Math.max(0, Math.floor(r.n));
    for (const block of held.filter((b) => b.agent === r.agent && b.atMs === r.atMs)) {
      const n = Math.min(block.n, left);
      if (!n) continue;
      block.n -= n;
      left -= n;
      for (const { scope, cap } of capsOf(m.policy, r.agent))
        if (cap.wakes !== undefined) takeFrom(capSeries(m, scope, cap, 'permits'), countedAt(block), n, nowMs);
      credited.add(r.agent);
    }
  }
  forgetExpired(m, nowMs);
  if (!credited.size || m.visibilityError?.unavailable) return;
  for (const [agent, hold] of Object.entries(m.capHolds)) {
    if (hold.scope === FLEET || credited.has(hold.scope)) turn.actions.push({ kind: 'nudge', agent });
  }
}
