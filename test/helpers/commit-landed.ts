import { effectKey } from '../../src/core/ids';
import type { EffectSlot } from '../../src/core/effect-slots';
import type { RunInput } from '../../src/core/run-types';
import { eventsOf } from '../../src/shadow/replay';
import type { EffectContext, EffectDefinition, EffectReceipt } from '../../src/agents/types';
import type { Exec, Rules } from './commit-world';

/*
 * The commit stage's rules as they were landed before the change that made every execution of a run
 * share its effect keys (HEAD 8ff0f1a), restated for the model test (test/unit/commit-model.test.ts)
 * to show that the model finds what they broke, and keep those counterexamples:
 * - a `reconcile` effect looked first only on a retry attempt or in a replay;
 * - a run started again by a redelivery after a failure (reuse ALLOW_DUPLICATE_FAILED_ONLY) or reset
 *   used `runKey#effect@step` and carried nothing of its failed execution;
 * - a replay ran under its own workflow ID `<run>/replay`, its effects under the keys the recorded run
 *   and earlier replays began (a refused one: `<run>/replay/<epoch>#effect@n<nth>`; one none began:
 *   `<run>/replay#effect@n<nth>`);
 * - `wakegate replay` with no `--reason` took every closed run (with `--reason failed`, a run whose
 *   recorded execution failed, however its replays ended), and its default epoch was the day;
 * - a replay sent the run's own event and its batch's, not the events skipped on it.
 */

const REPLAY = (of: string) => `${of}/replay`;

/** `reasonFailed`: the operator passed `--reason failed` (the landed replay took every closed run otherwise). */
export function landedRules(R: string, opts: { reasonFailed?: boolean } = {}): Rules {
  return {
    name: 'landed',
    replayId: REPLAY(R),
    key: (exec, step) => {
      const name = exec.staged[step]!.effect;
      if (!exec.input.replay) return effectKey(exec.input.runKey, name, step);
      const nth = exec.staged.slice(0, step).filter((p) => p.effect === name).length;
      return exec.input.replay.effects.filter((e) => e.effect === name)[nth]?.effectKey ?? effectKey(exec.input.runKey, name, `n${nth}`);
    },
    replaySlots: (execs: readonly Exec[], epoch: string): EffectSlot[] => {
      // The recorded run (R's latest execution) and every replay of it, oldest first: the last key begun per slot.
      const original = [...execs].reverse().find((e) => e.input.runKey === R)!;
      const runs = [original, ...execs.filter((e) => e.input.runKey === REPLAY(R))];
      const slots = new Map<string, { effectKey: string; rejected: boolean }[]>();
      for (const run of runs) {
        const nth = new Map<string, number>();
        for (const b of run.begun) {
          const n = nth.get(b.effect) ?? 0;
          nth.set(b.effect, n + 1);
          const slot = slots.get(b.effect) ?? [];
          slot[n] = b;
          slots.set(b.effect, slot);
        }
      }
      return [...slots].flatMap(([effect, slot]) =>
        [...slot].map((b, n) => ({ effect, effectKey: !b || b.rejected ? effectKey(`${REPLAY(R)}/${epoch}`, effect, `n${n}`) : b.effectKey })),
      );
    },
    restartSlots: () => undefined,
    resetSlots: () => undefined,
    commit: async (effect: EffectDefinition, ctx: EffectContext, replay: boolean): Promise<{ receipt: EffectReceipt; outcome: string }> => {
      if (effect.class !== 'reconcile' || (ctx.attempt === 1 && !replay)) return { receipt: await effect.apply({}, ctx), outcome: 'applied' };
      const found = await effect.find!(ctx);
      if (found) return { receipt: found, outcome: 'reconciled_landed' };
      return { receipt: await effect.apply({}, ctx), outcome: 'reconciled_redone' };
    },
    takes: (latest) => !opts.reasonFailed || latest.status === 'failed',
    defaultEpoch: (_latest, day) => `day-${day}`,
    // Its own event and its batch's: the events skipped on it were left out.
    replayEvents: (of) => eventsOf(of.input as RunInput),
  };
}
