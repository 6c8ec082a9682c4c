import { effectKey, type EffectKey } from './ids';

/*
 * The keys of one logical run's effects across its executions. A logical run (one workflow ID, its
 * run key) may execute more than once: a failed run started again by a redelivery of its event, a
 * `wakegate replay`, a reset from the Web UI. Each effect has a *slot*: its name and its place among
 * the run's effects of that name (the n-th `post_summary`). Every execution gives a slot the key the
 * executions before it gave it, so what one landed the next finds (a `reconcile` effect's `find`, a
 * `provider_key` effect's provider); a key the provider refused outright is followed by the next
 * key of that slot (a provider that remembers keys would refuse the fixed request under it too).
 * Pure: the same executions read give the same keys in every process.
 */

/**
 * One effect an execution began (a `commitEffect` activity): its name, key, and whether the
 * provider refused it outright: its one attempt failed `ProviderRejected`, so nothing can have
 * landed under the key in this execution. An effect that completed, was retried, or was still in
 * flight when the execution closed may have landed: not `rejected`.
 */
export interface EffectBegun {
  effect: string;
  effectKey: string;
  rejected: boolean;
}

/** The key a slot takes in the next execution; `pinned` once some execution may have landed under it (it never moves again). */
export interface EffectSlot {
  effect: string;
  effectKey: string;
  pinned?: boolean;
}

/** The key after a refused one: `…@n0` → `…@n0.r1` → `…@n0.r2`. */
export function afterRefused(key: string): string {
  const m = /^(.*)\.r(\d+)$/.exec(key);
  return m ? `${m[1]}.r${Number(m[2]) + 1}` : `${key}.r1`;
}

/**
 * The slots the next execution of a logical run carries: those the latest execution carried (its
 * input's), each replaced by what the latest began in it, in slot order. A slot moves to its next
 * key only when the provider refused it outright and no execution may have landed under its key
 * (a provider that later refuses a key it holds, for a changed body or a request still in flight,
 * must not make the slot land twice). An execution commits in staged order, so what it began of a
 * name is a prefix of that name's slots.
 */
export function nextSlots(carried: readonly EffectSlot[] | undefined, begun: readonly EffectBegun[]): EffectSlot[] {
  const slots = new Map<string, EffectSlot[]>();
  const slotsOf = (effect: string) => slots.get(effect) ?? (slots.set(effect, []), slots.get(effect)!);
  for (const c of carried ?? []) slotsOf(c.effect).push({ ...c });
  const nth = new Map<string, number>();
  for (const b of begun) {
    const n = nth.get(b.effect) ?? 0;
    nth.set(b.effect, n + 1);
    const prior = slotsOf(b.effect)[n];
    const moves = b.rejected && !prior?.pinned;
    slotsOf(b.effect)[n] = moves
      ? { effect: b.effect, effectKey: afterRefused(b.effectKey) }
      : { effect: b.effect, effectKey: b.effectKey, ...(prior?.pinned || !b.rejected ? { pinned: true } : {}) };
  }
  return [...slots.values()].flatMap((s) => s.filter(Boolean));
}

/** The slot a key fills: its effect's name and place, read from the key's end (`…#post@n1.r2` → post, 1). */
export function slotOfKey(key: string, effect: string): { effect: string; nth: number } | undefined {
  const m = /@n(\d+)(?:\.r\d+)?$/.exec(key);
  return m && key.slice(0, m.index).endsWith(`#${effect}`) ? { effect, nth: Number(m[1]) } : undefined;
}

/**
 * {@link nextSlots} of the latest execution, over every execution of the logical run: a key any
 * earlier execution began and the provider did not refuse outright may have landed, so its slot is
 * pinned to it, whatever the latest execution carried. A run reset from the Web UI starts from the
 * input of the execution it was reset from (maybe not the latest one), so its carried slots may not
 * know what the executions after that one landed; this is where those are put back.
 */
export function slotsAcross(
  carried: readonly EffectSlot[] | undefined,
  latest: readonly EffectBegun[],
  earlier: readonly (readonly EffectBegun[])[],
): EffectSlot[] {
  const next = nextSlots(carried, latest);
  const byName = new Map<string, EffectSlot[]>();
  for (const s of next) byName.set(s.effect, [...(byName.get(s.effect) ?? []), s]);
  for (const b of earlier.flat()) {
    const slot = b.rejected ? undefined : slotOfKey(b.effectKey, b.effect);
    if (!slot) continue;
    const list = byName.get(b.effect) ?? (byName.set(b.effect, []), byName.get(b.effect)!);
    const at = list[slot.nth];
    if (at?.pinned) continue; // (a pinned slot never moves)
    for (let i = list.length; i < slot.nth; i++) list[i] = { effect: b.effect, effectKey: b.effectKey.replace(/@n\d+(?:\.r\d+)?$/, `@n${i}`) };
    list[slot.nth] = { effect: b.effect, effectKey: b.effectKey, pinned: true };
  }
  return [...byName.values()].flatMap((l) => l);
}

/**
 * The key of the effect at `step` of an execution's staged list: the key its slot carries from the
 * executions before (only a slot whose key a provider refused has moved), or `runKey#effect@n<nth>`,
 * the n-th effect of that name. Never the step: a run reset from the Web UI after a fix that stages
 * its effects in another order gives each effect the key the run gave it before.
 */
export function slotKey(runKey: string, carried: readonly EffectSlot[] | undefined, staged: readonly { effect: string }[], step: number): string {
  const name = staged[step]!.effect;
  const nth = staged.slice(0, step).filter((p) => p.effect === name).length;
  return carried?.filter((e) => e.effect === name)[nth]?.effectKey ?? effectKey(runKey, name, `n${nth}`);
}

/** The effect key of the effect at `step` of a run's staged list (see {@link slotKey}). */
export function runEffectKey(
  input: { runKey: string; replay?: { effects: readonly EffectSlot[] }; reset?: { slots?: readonly EffectSlot[] } },
  staged: readonly { effect: string }[],
  step: number,
): EffectKey {
  return slotKey(input.runKey, input.reset?.slots ?? input.replay?.effects, staged, step) as EffectKey;
}
