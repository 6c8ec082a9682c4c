import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ApplicationFailure } from '@temporalio/common';
import { byClass } from '../../activities/commit/commit';
import { nextSlots, runEffectKey, slotsAcross } from '../../src/core/effect-slots';
import { FailureType } from '../../src/core/failures';
import type { AbsorbedEvent, RunInput, RunResult } from '../../src/core/run-types';
import type { EffectContext, EffectDefinition } from '../../src/agents/types';
import { eventsOf, replayChoice } from '../../src/shadow/replay';
import { landedRules } from '../helpers/commit-landed';
import { CLASS, R, type Cmd, type Exec, type Name, type Rules } from '../helpers/commit-world';

/*
 * A model-based test of the commit stage under what senders and operators do. One logical run (one
 * workflow ID, `R`) of an agent that stages a few effects, each of a class, against simulated
 * providers: `idempotent` (a natural key: doing it again changes nothing), `provider_key` (the
 * provider keeps each key for KEY_MEMORY_MS, and a refusal under a key too), `reconcile` (no key; a
 * store searchable by the reference the effect stores, whose look-up can be down).
 *
 * The product code under test, called as the worker and the CLI call it: the class rules
 * (activities/commit/commit.ts `byClass`), the keys of every execution's effects
 * (src/core/effect-slots.ts `runEffectKey`, `nextSlots`), which runs a replay takes
 * (src/shadow/replay.ts `replayChoice`) and the events it sends (`eventsOf`). The world stands in for
 * Temporal and the gate (src/gate/one-call.ts, src/gate/replay.ts): executions of one workflow ID,
 * one open at a time; a delivery starts the run, is answered from an open or completed one, and
 * starts a failed (timed out, terminated) one again carrying what it began; a replay follows the
 * latest execution it read, once per epoch; a reset from the first workflow task starts a new
 * execution with the same input and none of its predecessor's history.
 *
 * fast-check generates command lists: deliver (and redeliver: the same), step (commit the next
 * effect), crash after an apply before its record (the activity is retried), fail for good (the
 * provider refuses the next effect), look-up down or up, deploy a fix that stages the effects in
 * another order, kill, supersede, terminate, reset, replay (no epoch, a named epoch, with
 * `--include-cancelled`), time. After every command it checks:
 *  1. no logical effect (an effect's slot: its name and place among effects of that name) is
 *     applied twice at a provider: a `reconcile` store holds at most one item per slot; a
 *     `provider_key` provider holds a second only under the same key after it forgot that key;
 *  2. no effect of a killed run lands after the kill, unless an operator replayed it with
 *     `--include-cancelled`; a superseded run is never run again;
 *  3. every event of a run (its own and those skipped on it) is in each replay's input;
 *  4. a run whose latest execution succeeded is run again only under an epoch an operator names.
 */

const KEY_MEMORY_MS = 1_000;

export const CURRENT: Rules = {
  name: 'current',
  replayId: R,
  key: (exec, step) => runEffectKey({ ...exec.input, ...(exec.resetSlots ? { reset: { slots: exec.resetSlots } } : {}) }, exec.staged, step),
  replaySlots: (execs) => CURRENT.restartSlots(execs)!,
  restartSlots: (execs) => {
    const latest = execs[execs.length - 1]!;
    return slotsAcross(
      latest.input.replay?.effects,
      latest.begun,
      execs.slice(0, -1).map((e) => e.begun),
    );
  },
  resetSlots: (execs, base) =>
    slotsAcross(
      base.input.replay?.effects,
      [],
      execs.map((e) => e.begun),
    ),
  commit: (effect, ctx, reexecution) => byClass(effect, {}, ctx, reexecution),
  takes: (latest, q) =>
    replayChoice(
      {
        status: latest.status.toUpperCase(),
        ...(latest.result ? { result: latest.result as RunResult } : {}),
        ...(latest.input.replay ? { replayEpoch: latest.input.replay.epoch } : {}),
      },
      q,
    ).take,
  defaultEpoch: (latest) => `after:${latest.runId}`,
  replayEvents: (of) => eventsOf(of.input as RunInput, of.history),
};

export class Violation extends Error {}

/** The simulated world: providers, the executions of each workflow ID, the operator's record. */
class World {
  now = 0;
  day = 0;
  /** Executions by workflow ID, oldest first: R's, and (LANDED) its replay ID's. */
  ids = new Map<string, Exec[]>();
  /** The order the deployed code stages effects in (a fix may change it). */
  order: Name[];
  lookupDown = false;
  failNext = false;
  refuseKnown = false;
  /** reconcile: items by reference; provider_key: items, and what the provider remembers of each key. */
  reconcileItems: { ref: string; slot: string }[] = [];
  keyedItems: { key: string; slot: string; atMs: number }[] = [];
  remembered = new Map<string, { atMs: number; refused: boolean }>();
  idempotentSlots = new Set<string>();
  killedAt?: number;
  replayedKilled = false;
  superseded = false;
  epochs = new Set<string>();
  private seq = 0;
  /** Coalesced: the run's events are its batch's, some skipped on it; a redelivery is answered by its coalescer, never run again. */
  readonly skipped: AbsorbedEvent[];

  constructor(
    readonly rules: Rules,
    plan: Name[],
    readonly path: 'one-call' | 'coalesced',
    skipped: AbsorbedEvent[],
  ) {
    this.order = plan;
    this.skipped = path === 'coalesced' ? skipped : [];
  }

  latestOf(id: string): Exec | undefined {
    const all = this.ids.get(id);
    return all?.[all.length - 1];
  }

  private running(): Exec[] {
    return [...this.ids.values()].flatMap((all) => all.filter((e) => e.status === 'running'));
  }

  private slotOf(exec: Exec, step: number): string {
    const name = exec.staged[step]!.effect;
    return `${name}#${exec.staged.slice(0, step).filter((p) => p.effect === name).length}`;
  }

  private remembers(key: string): { atMs: number; refused: boolean } | undefined {
    const r = this.remembered.get(key);
    return r && this.now - r.atMs < KEY_MEMORY_MS ? r : undefined;
  }

  /** The effect as its agent defines it, against this world's providers, for the slot it fills. */
  private effect(name: Name, slot: string): EffectDefinition {
    const cls = CLASS[name];
    const refuse = () => {
      this.failNext = false;
      throw ApplicationFailure.nonRetryable('403 refused', FailureType.ProviderRejected);
    };
    return {
      name,
      description: name,
      class: cls,
      reversible: true,
      input: undefined as never,
      timeoutMs: 30_000,
      apply: async (_args, ctx) => {
        if (cls === 'provider_key') {
          const known = this.remembers(ctx.effectKey);
          if (known?.refused) throw ApplicationFailure.nonRetryable('refused before under this key', FailureType.ProviderRejected);
          if (known && this.refuseKnown) {
            // A key it holds, with another body (a model that answered otherwise this time): 422.
            this.refuseKnown = false;
            throw ApplicationFailure.nonRetryable('422 the key was used with another body', FailureType.ProviderRejected);
          }
          if (known) return { ref: ctx.effectKey, existed: true };
          if (this.failNext) {
            this.remembered.set(ctx.effectKey, { atMs: this.now, refused: true });
            refuse();
          }
          const earlier = this.keyedItems.find((i) => i.slot === slot);
          if (earlier && earlier.key !== ctx.effectKey) throw new Violation(`provider_key ${slot} applied twice: ${earlier.key} and ${ctx.effectKey}`);
          this.keyedItems.push({ key: ctx.effectKey, slot, atMs: this.now });
          this.remembered.set(ctx.effectKey, { atMs: this.now, refused: false });
          return { ref: ctx.effectKey };
        }
        if (this.failNext) refuse();
        if (cls === 'reconcile') {
          if (this.reconcileItems.some((i) => i.slot === slot)) throw new Violation(`reconcile ${slot} applied twice (now under ${ctx.effectKey})`);
          this.reconcileItems.push({ ref: ctx.effectKey, slot });
          return { ref: ctx.effectKey };
        }
        const existed = this.idempotentSlots.has(slot);
        this.idempotentSlots.add(slot);
        return { ref: slot, existed };
      },
      ...(cls === 'reconcile'
        ? {
            find: async (ctx: EffectContext) => {
              if (this.lookupDown) throw new Error('search is unavailable');
              const item = this.reconcileItems.find((i) => i.ref === ctx.effectKey);
              return item ? { ref: item.ref } : undefined;
            },
          }
        : {}),
    };
  }

  private start(id: string, input: Exec['input']): Exec {
    const exec: Exec = {
      runId: `run-${++this.seq}`,
      status: 'running',
      input,
      staged: this.order.map((effect) => ({ effect })),
      step: 0,
      attempt: 1,
      begun: [],
      history: [],
    };
    if (!this.ids.has(id) && id === R && this.skipped.length) exec.history.push({ kind: 'signal', at: '', name: 'skipped', input: { events: this.skipped } });
    this.ids.set(id, [...(this.ids.get(id) ?? []), exec]);
    return exec;
  }

  private firstInput(): Exec['input'] {
    return {
      runKey: R,
      eventKey: 'E',
      source: 'tickets',
      entity: 'api',
      type: 'incident.opened',
      occurredAt: '2026-12-06T09:00:00.000Z',
      payload: {},
      origin: { kind: 'event' },
    };
  }

  /** A replay of R under the rules' replay ID, on the events it reads from R's latest execution (src/shadow/replay.ts `eventsOf`). */
  private replay(of: Exec, epoch: string): void {
    const events = this.rules
      .replayEvents(of)
      .slice(1)
      .map((e, i): AbsorbedEvent => ({ ...e, eventKey: `ev${i}`, deliveryIds: [] }));
    const carried = new Set(events.map((e) => e.payload?.n));
    for (const s of this.skipped) if (!carried.has(s.payload?.n)) throw new Violation(`a replay lost the event skipped on its run: ${s.eventKey}`);
    const all = [...(this.ids.get(R) ?? []), ...(this.rules.replayId === R ? [] : (this.ids.get(this.rules.replayId) ?? []))];
    const effects = this.rules.replaySlots(all, epoch);
    this.start(this.rules.replayId, {
      ...of.input,
      runKey: this.rules.replayId,
      replay: { epoch, of: R, by: 'replay', effects, ...(events.length ? { events } : {}) },
    });
  }

  /** A delivery of R's event (src/gate/one-call.ts): a first start, an answer from an open or completed run, or a restart of a failed one. */
  private deliver(): void {
    const latest = this.latestOf(R);
    if (!latest) {
      this.start(R, this.firstInput());
      return;
    }
    if (this.path === 'coalesced' || (latest.status !== 'failed' && latest.status !== 'terminated')) return; // answered from its decision
    const effects = this.rules.restartSlots(this.ids.get(R)!);
    const events = latest.input.replay?.events;
    this.start(
      R,
      effects
        ? { ...latest.input, replay: { epoch: `after:${latest.runId}`, of: R, by: 'redelivery', effects, ...(events ? { events } : {}) } }
        : this.firstInput(),
    );
  }

  async run(cmd: Cmd): Promise<void> {
    const live = this.running();
    const open = 'pick' in cmd && live.length ? live[cmd.pick % live.length] : undefined;
    switch (cmd.k) {
      case 'deliver':
        return this.deliver();
      case 'step':
      case 'crashAfterApply':
        if (open) await this.commitStep(open, cmd.k === 'crashAfterApply');
        return;
      case 'failNext':
        this.failNext = true;
        return;
      case 'refuseKnown':
        this.refuseKnown = true;
        return;
      case 'lookup':
        this.lookupDown = cmd.down;
        return;
      case 'deploy':
        this.order = [...this.order].reverse();
        return;
      case 'nextDay':
        this.day += 1;
        return;
      case 'kill':
        if (!open) return;
        open.status = 'completed';
        open.result = { terminalReason: 'cancelled', killedBy: { who: 'ana', reason: 'loop' } };
        this.killedAt = this.now;
        this.replayedKilled = false;
        return;
      case 'supersede':
        // Only a coalesced run is superseded, and only before it began committing.
        if (!open || open.step > 0 || this.path !== 'coalesced' || open.input.replay) return;
        open.status = 'completed';
        open.result = { terminalReason: 'cancelled', supersededBy: 'R2' };
        this.superseded = true;
        return;
      case 'terminate':
        if (open) open.status = 'terminated';
        return;
      case 'reset': {
        const id = [...this.ids.keys()][cmd.pick % Math.max(1, this.ids.size)];
        const all = id ? (this.ids.get(id) ?? []) : [];
        const latest = all[all.length - 1];
        // The latest execution, or (the Web UI lets a person pick any) an older one.
        const base = all[all.length - 1 - ((cmd.older ?? 0) % Math.max(1, all.length))];
        if (!id || !latest || !base) return;
        if (latest.status === 'running') latest.status = 'terminated';
        // Temporal reapplies the signals that came after the reset point (the skip records among them).
        const before = [...all];
        const reset = this.start(id, base.input);
        reset.history = [...base.history];
        const slots = this.rules.resetSlots(before, base);
        if (slots) reset.resetSlots = slots;
        // A person resetting a killed or superseded run (any execution of it) runs it again on purpose, as --include-cancelled does.
        if (base.result?.killedBy || latest.result?.killedBy) this.replayedKilled = true;
        if (base.result?.supersededBy || latest.result?.supersededBy) this.superseded = false;
        return;
      }
      case 'replay': {
        const latest = this.latestOf(R);
        const replaying = this.latestOf(this.rules.replayId);
        if (!latest || latest.status === 'running' || replaying?.status === 'running') return;
        if (!this.rules.takes(latest, cmd)) return;
        const epoch = cmd.epoch ?? this.rules.defaultEpoch(latest, this.day);
        if (this.epochs.has(epoch)) return;
        if (this.superseded) throw new Violation('a superseded run was replayed');
        const last = this.rules.replayId === R ? latest : (replaying ?? latest);
        if (!cmd.epoch && last.result?.terminalReason === 'success')
          throw new Violation('a run whose latest execution succeeded was replayed again with no epoch named: its model paid twice');
        if (latest.result?.killedBy && cmd.includeCancelled) this.replayedKilled = true;
        this.epochs.add(epoch);
        this.replay(latest, epoch);
        return;
      }
      case 'advance':
        this.now += cmd.ms;
        return;
    }
  }

  private async commitStep(exec: Exec, crash: boolean): Promise<void> {
    if (exec.step >= exec.staged.length) {
      exec.status = 'completed';
      exec.result = { terminalReason: 'success' };
      return;
    }
    if (this.killedAt !== undefined && !this.replayedKilled) throw new Violation('an effect of a killed run after the kill');
    const key = this.rules.key(exec, exec.step);
    const name = exec.staged[exec.step]!.effect;
    const begun = exec.begun.find((b) => b.effectKey === key) ?? { effect: name, effectKey: key, rejected: false };
    if (!exec.begun.includes(begun)) exec.begun.push(begun);
    const ctx = {
      effectKey: key,
      attempt: exec.attempt,
      signal: new AbortController().signal,
      run: { runKey: R, agent: 'a', wakeKey: 'api', entity: 'api', eventKey: 'E' },
      outside: {} as never,
    };
    try {
      await this.rules.commit(this.effect(name, this.slotOf(exec, exec.step)), ctx, exec.input.replay !== undefined);
    } catch (err) {
      if (err instanceof Violation) throw err;
      const type = (err as ApplicationFailure).type;
      if (type === FailureType.EffectAmbiguous) {
        exec.status = 'completed';
        exec.result = { terminalReason: 'escalated' };
        return;
      }
      // Refused outright only when this was its one attempt (src/commit/executions.ts reads it so).
      begun.rejected = type === FailureType.ProviderRejected && exec.attempt === 1;
      exec.status = 'failed';
      return;
    }
    if (crash) {
      exec.attempt += 1; // the outcome was lost: Temporal retries the activity under the same key
      return;
    }
    begun.rejected = false;
    exec.step += 1;
    exec.attempt = 1;
  }
}

export const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ k: 'deliver' as const }) },
  { weight: 8, arbitrary: fc.record({ k: fc.constant('step' as const), pick: fc.nat(1) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('crashAfterApply' as const), pick: fc.nat(1) }) },
  { weight: 2, arbitrary: fc.constant({ k: 'failNext' as const }) },
  { weight: 1, arbitrary: fc.constant({ k: 'refuseKnown' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('lookup' as const), down: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ k: 'deploy' as const }) },
  { weight: 1, arbitrary: fc.constant({ k: 'nextDay' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('kill' as const), pick: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('supersede' as const), pick: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('terminate' as const), pick: fc.nat(1) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('reset' as const), pick: fc.nat(1), older: fc.nat(2) }) },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('replay' as const), epoch: fc.constantFrom('e1', 'e2'), includeCancelled: fc.boolean() }, { requiredKeys: ['k'] }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('advance' as const), ms: fc.constantFrom(100, 2_000) }) },
);

/** One generated case: the agent's effects in the order its first code stages them, the path, the events skipped on the run, the commands. */
export interface Case {
  plan: Name[];
  path: 'one-call' | 'coalesced';
  skipped: AbsorbedEvent[];
  cmds: Cmd[];
}

export const caseArb: fc.Arbitrary<Case> = fc.record({
  plan: fc.array(fc.constantFrom<Name>('ticket', 'post', 'sync'), { minLength: 1, maxLength: 3 }),
  path: fc.constantFrom('one-call' as const, 'coalesced' as const),
  skipped: fc.nat(2).map((n) =>
    Array.from({ length: n }, (_, i): AbsorbedEvent => ({
      eventKey: `S${i}`,
      source: 'tickets',
      type: 'incident.opened',
      entity: 'api',
      occurredAt: `2026-12-06T09:00:0${i + 1}.000Z`,
      deliveryIds: [],
      payload: { n: i },
    })),
  ),
  cmds: fc.array(cmdArb, { maxLength: 40 }),
});

/** Run one command list; the first violation, or undefined. */
export async function violation(rules: Rules, c: Case): Promise<string | undefined> {
  const world = new World(rules, c.plan, c.path, c.skipped);
  const { cmds } = c;
  try {
    for (const cmd of cmds) await world.run(cmd);
    return undefined;
  } catch (err) {
    if (err instanceof Violation) return err.message;
    throw err;
  }
}

const NUM_RUNS = Number(process.env.COMMIT_MODEL_RUNS ?? 10000);

describe('the commit stage under senders and operators (model-based)', () => {
  test('no logical effect twice, nothing after a kill, no event left out of a replay, over generated command lists', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const found = await violation(CURRENT, c);
        assert.equal(found, undefined, found);
      }),
      { numRuns: NUM_RUNS, includeErrorInReport: true },
    );
  });
});

/*
 * The shrunk counterexamples the model found on the rules as landed before this change (restated in
 * test/unit/commit-model-landed.ts), and one it found on this change's first version, kept as
 * regression cases: each must meet no violation under the rules as they are, and each still shows
 * the landed rule it caught (so the model keeps the power to find it).
 */
const S0: AbsorbedEvent = {
  eventKey: 'S0',
  source: 'tickets',
  type: 'incident.opened',
  entity: 'api',
  occurredAt: '2026-12-06T09:00:01.000Z',
  deliveryIds: [],
  payload: { n: 0 },
};
const step = { k: 'step' as const, pick: 0 };
/** This change's rules before a reset's base (and every other execution of the run) was read: the slots of the latest execution alone. */
const LATEST_ONLY: Rules = {
  ...CURRENT,
  name: 'latest execution only',
  restartSlots: (execs) => nextSlots(execs[execs.length - 1]!.input.replay?.effects, execs[execs.length - 1]!.begun),
  replaySlots: (execs) => LATEST_ONLY.restartSlots(execs)!,
  resetSlots: () => undefined,
};

const counterexamples: { name: string; before: Rules; found: RegExp; c: Case }[] = [
  {
    // Landed: the restart on a redelivery committed under `R#ticket@0` at attempt 1, and a reconcile
    // effect looked first only on a retry: the ticket filed before the failure was filed again.
    name: 'a redelivery after a failure files no second ticket',
    before: landedRules(R),
    found: /reconcile ticket#0 applied twice/,
    c: { plan: ['ticket', 'ticket'], path: 'one-call', skipped: [], cmds: [{ k: 'deliver' }, step, { k: 'failNext' }, step, { k: 'deliver' }, step] },
  },
  {
    // Landed: a reset from the first workflow task ran the commit at attempt 1 again: no look.
    name: 'a reset from the first workflow task files no second ticket',
    before: landedRules(R),
    found: /reconcile ticket#0 applied twice/,
    c: { plan: ['ticket'], path: 'one-call', skipped: [], cmds: [{ k: 'deliver' }, step, { k: 'reset', pick: 0 }, step] },
  },
  {
    // Landed: the replay (its own workflow ID) landed the ticket under a key of its epoch after the
    // provider refused the recorded run's; a redelivery then restarted the failed original beside it,
    // under `R#ticket@0`, which no look-up of the replay's key sees.
    name: 'a redelivery after a replay is answered from it, not run beside it',
    before: landedRules(R, { reasonFailed: true }),
    found: /reconcile ticket#0 applied twice/,
    c: { plan: ['ticket'], path: 'one-call', skipped: [], cmds: [{ k: 'failNext' }, { k: 'deliver' }, step, { k: 'replay' }, step, { k: 'deliver' }, step] },
  },
  {
    // Landed: `wakegate replay` with no --reason took every closed run, a killed one too.
    name: 'replay with no flag does not run a killed run again',
    before: landedRules(R),
    found: /an effect of a killed run after the kill/,
    c: { plan: ['ticket'], path: 'one-call', skipped: [], cmds: [{ k: 'deliver' }, { k: 'kill', pick: 0 }, { k: 'replay' }, step] },
  },
  {
    // Landed: nor did it leave out a run its coalescer superseded, whose events its restart ran.
    name: 'replay never runs a superseded run',
    before: landedRules(R),
    found: /a superseded run was replayed/,
    c: { plan: ['ticket'], path: 'coalesced', skipped: [], cmds: [{ k: 'deliver' }, { k: 'supersede', pick: 0 }, { k: 'replay' }] },
  },
  {
    // Landed: the default epoch was the day; the next day the same command replayed a run whose replay had succeeded.
    name: 'the same replay command on another day starts nothing',
    before: landedRules(R, { reasonFailed: true }),
    found: /model paid twice/,
    c: {
      plan: ['ticket'],
      path: 'one-call',
      skipped: [],
      cmds: [{ k: 'deliver' }, { k: 'failNext' }, step, { k: 'replay' }, step, { k: 'nextDay' }, step, { k: 'replay' }],
    },
  },
  {
    // Landed: a replay sent the run's own event and its batch's; those skipped on it were left out.
    name: "a replay runs the events skipped on its run (overlap 'skip')",
    before: landedRules(R, { reasonFailed: true }),
    found: /a replay lost the event skipped on its run: S0/,
    c: { plan: ['ticket'], path: 'coalesced', skipped: [S0], cmds: [{ k: 'deliver' }, { k: 'failNext' }, step, { k: 'replay' }] },
  },
  {
    // Found by a review of this change: a provider that refuses a key it holds (a changed body) made
    // the slot move to its next key, and the next execution landed the post a second time.
    name: 'a slot some execution may have landed under never moves to a new key',
    before: landedRules(R, { reasonFailed: true }),
    found: /provider_key post#0 applied twice/,
    c: {
      plan: ['post', 'ticket'],
      path: 'one-call',
      skipped: [],
      cmds: [{ k: 'deliver' }, step, { k: 'failNext' }, step, { k: 'refuseKnown' }, { k: 'replay' }, step, { k: 'nextDay' }, { k: 'replay' }, step],
    },
  },
  {
    // This change's first version still keyed a first execution's effects by step: a fix deployed
    // that staged the effects in another order, then a reset, gave the ticket `@1` where it had `@0`.
    name: 'a reset after a fix that reorders the effects files no second ticket',
    before: landedRules(R),
    found: /reconcile ticket#0 applied twice/,
    c: { plan: ['sync', 'ticket'], path: 'one-call', skipped: [], cmds: [{ k: 'deliver' }, step, { k: 'deploy' }, step, { k: 'reset', pick: 0 }, step] },
  },
  {
    // Found by CI on this change: a post landed, a reset ran the run again from its input (which
    // knew nothing of the post), the provider refused the key it held (another body), and the
    // replay read only the reset execution: the slot moved, and the post landed a second time.
    name: "a replay after a reset keeps the key the reset's base run may have landed",
    before: LATEST_ONLY,
    found: /provider_key post#0 applied twice/,
    c: {
      plan: ['post', 'ticket'],
      path: 'one-call',
      skipped: [],
      cmds: [{ k: 'refuseKnown' }, { k: 'deliver' }, step, { k: 'reset', pick: 0 }, step, { k: 'replay' }, step],
    },
  },
  {
    // Found by the model on the fix above: the Web UI resets any execution, an older one too. The
    // first execution's ticket was refused outright, the replay filed it under the slot's next key,
    // and a reset of the first execution (its input knowing nothing of that key) filed it again.
    name: 'a reset of an older execution finds the ticket a later one filed under a moved key',
    before: LATEST_ONLY,
    found: /reconcile ticket#0 applied twice/,
    c: {
      plan: ['ticket'],
      path: 'one-call',
      skipped: [],
      cmds: [{ k: 'failNext' }, { k: 'deliver' }, step, { k: 'replay' }, step, { k: 'reset', pick: 0, older: 1 }, step],
    },
  },
];

describe('the commit-stage model: counterexamples found on the landed rules', () => {
  for (const { name, before, found, c } of counterexamples) {
    test(name, async () => {
      assert.equal(await violation(CURRENT, c), undefined);
      assert.match((await violation(before, c)) ?? 'no violation', found, `the rule it caught (${before.name})`);
    });
  }
});
