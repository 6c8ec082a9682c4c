import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_HOLD_MS } from '../../src/core/permit-types';
import type { SupervisorMode, SupervisorPolicy } from '../../src/core/supervisor-types';
import { PermitStock } from '../../src/supervisor/permit-stock';
import { continueWith, nextWakeMs, refusal, start, transition, type Input, type MachineState } from '../../workflows/supervisor/machine';

/*
 * The supervisor machine and the workers' permit stocks, model-based: fast-check generates
 * interleavings of wakes, runs asking for permits (from stock or by lease), time passing, returns
 * (delivered or lost), a person's halt, drain, reset, release and discard, storm and error-rate
 * trips, continue-as-new (the state through JSON), a worker process dying with its stock, and a
 * workflow task that fails between a decision and its commands (the step made again). A small
 * reference model says what the mode must be and how many runs there are; after every command:
 * - the machine's mode is the model's: a halt or trip is sticky until a person resets it;
 * - every run created is started, waiting, held or discarded: nothing is dropped;
 * - no run starts while the supervisor is halted or draining (checked at each start);
 * - no span of a cap's window holds more starts than the cap;
 * - the state is plain JSON.
 * The harness plays the worker processes as src/supervisor/permit-leaser.ts does (hold timed from the
 * ask, a permit from stock only on an armed read), with a memo read as fresh as the command.
 */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const STORM = 80;
const FLEET_CAP = { windowMs: 60_000, wakes: 30 };
const AGENT_CAP = { windowMs: 10_000, wakes: 12 };
const HOLD_MS = 2_000;
const AGENTS = ['a', 'b'] as const;
const HOLDERS = ['p1', 'p2'] as const;
type Agent = (typeof AGENTS)[number];
type Holder = (typeof HOLDERS)[number];

const POLICY: SupervisorPolicy = {
  storm: { fleetPerMinute: STORM, rationale: 'model' },
  errorRate: { windowMs: 60_000, minRuns: 4, threshold: 0.5, reasons: ['failed'], rationale: 'model' },
  caps: { fleet: [{ ...FLEET_CAP, rationale: 'model' }], agents: { a: [{ ...AGENT_CAP, rationale: 'model' }] } },
  onTrip: { a: 'cancel' },
  overCap: {},
  observeEveryMs: 500,
  holdRecheckMs: 1000,
};

/** How long a holder keeps a block of `agent`, as the leaser has it: at most a twentieth of its shortest cap window. */
const holdFor = (agent: Agent) =>
  Math.min(HOLD_MS, MAX_HOLD_MS, ...(agent === 'a' ? [AGENT_CAP.windowMs, FLEET_CAP.windowMs] : [FLEET_CAP.windowMs]).map((w) => Math.floor(w / 20)));

/** The reference model: the mode, the storm's wakes, and how many runs are in each place. */
interface Model {
  mode: SupervisorMode;
  /** Wake times since the last reset (the storm count starts afresh then). */
  wakeTimes: number[];
  /** Runs closed since the last reset: agent, close time, failed or not. */
  closures: { agent: Agent; closeMs: number; bad: boolean }[];
  created: number;
  discarded: number;
}

/** The real thing: the machine, the clock, each worker process's stock, and the runs. */
interface Real {
  m: MachineState;
  now: number;
  stocks: Map<Holder, PermitStock>;
  /** Runs waiting to ask (new, released, or held on a cap): their agents. */
  waiting: Agent[];
  /** Runs held while halted or draining, with when they were held. */
  held: { agent: Agent; atMs: number }[];
  starts: { agent: Agent; atMs: number }[];
  discarded: number;
  /** Watches of closed runs asked for. */
  watches: number;
}

const newStock = () => new PermitStock({ demandWindowMs: HOLD_MS, maxPrefetch: 64 });

function apply<I extends Input>(r: Real, input: I) {
  const watching = r.m.observing;
  const s = transition(r.m, input, r.now);
  const watches = s.actions.filter((a) => a.kind === 'observe').length;
  assert.ok(watches <= 1 && !(watching && watches), 'one watch of closed runs at a time');
  if (watches) r.watches += 1;
  r.m = s.state;
  return s;
}

/**
 * The storm breaker as the model has it: the wakes of the last minute, where a wake counts while any
 * of its second lies inside the minute. Deliberate: the machine's windows count in buckets of a
 * sixtieth of the window and keep a bucket while any of it is inside, so a wake counts up to one
 * bucket longer than the window (conservative); the model counts the same way.
 */
const inMinute = (t: number, nowMs: number) => t - (t % 1000) + 1000 > nowMs - 60_000;
const stormCount = (times: number[], nowMs: number) => times.filter((t) => inMinute(t, nowMs)).length;

/** The error-rate breaker as the model has it: any scope (the fleet, an agent) with 4 runs or more in the minute, over half failed. */
function errorRateOver(model: Model, nowMs: number): boolean {
  const recent = model.closures.filter((c) => inMinute(c.closeMs, nowMs));
  return [undefined, ...AGENTS].some((agent) => {
    const runs = recent.filter((c) => !agent || c.agent === agent);
    return runs.length >= 4 && runs.filter((c) => c.bad).length / runs.length > 0.5;
  });
}

/** Tripped: the runs waiting to ask are held. */
function holdWaiting(r: Real): void {
  for (const agent of r.waiting.splice(0)) r.held.push({ agent, atMs: r.now });
}

function startRun(r: Real, agent: Agent): void {
  assert.equal(r.m.mode, 'armed', `a run of ${agent} started while the supervisor was ${r.m.mode}`);
  r.starts.push({ agent, atMs: r.now });
}

/** The most starts in any span of `windowMs`. */
function busiestSpan(times: number[], windowMs: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

function invariants(model: Model, r: Real): void {
  assert.equal(r.m.mode, model.mode, 'the mode is sticky: only a person resets it');
  assert.equal(r.starts.length + r.waiting.length + r.held.length + r.discarded, model.created, 'every run is started, waiting, held or discarded');
  assert.equal(r.discarded, model.discarded);
  if (model.mode !== 'armed') assert.equal(r.waiting.length, 0, 'while halted, what arrives is held');
  const all = r.starts.map((s) => s.atMs);
  assert.ok(busiestSpan(all, FLEET_CAP.windowMs) <= FLEET_CAP.wakes, `the fleet cap: ${busiestSpan(all, FLEET_CAP.windowMs)} starts in one window`);
  const a = r.starts.filter((s) => s.agent === 'a').map((s) => s.atMs);
  assert.ok(busiestSpan(a, AGENT_CAP.windowMs) <= AGENT_CAP.wakes, `the cap of a: ${busiestSpan(a, AGENT_CAP.windowMs)} starts in one window`);
  assert.deepEqual(JSON.parse(JSON.stringify(r.m)), r.m, 'the state is plain JSON');
  // Runs that may have started after what the last watch saw are never left unwatched: a watch is in
  // flight, or one is due now (the loop asks for it at its next tick).
  if (!r.m.observing && !r.m.visibilityError?.unavailable && r.m.lastActivityMs > (r.m.watchedToMs ?? -Infinity)) {
    assert.ok(
      (nextWakeMs(r.m) ?? Infinity) <= Math.max(r.now, r.m.observedToMs + 1000),
      'a wake, lease or release after the last watch brings a watch at once',
    );
  }
}

type Cmd = fc.Command<Model, Real>;
const cmd = (name: string, run: (model: Model, r: Real) => void, check: (model: Model) => boolean = () => true): Cmd => ({
  check,
  run: (model, r) => {
    run(model, r);
    invariants(model, r);
  },
  toString: () => name,
});

/** Wakes the gate admitted: counted (a storm trips), and each becomes a run that will ask. */
const wakes = (agent: Agent, n: number) =>
  cmd(`wakes(${agent},${n})`, (model, r) => {
    const watching = model.mode !== 'halted';
    apply(r, { kind: 'wakes', counts: { [agent]: n } });
    for (let i = 0; i < n; i++) model.wakeTimes.push(r.now);
    if (watching && stormCount(model.wakeTimes, r.now) > STORM) model.mode = 'halted';
    if (r.m.mode !== 'armed') holdWaiting(r);
    model.created += n;
    for (let i = 0; i < n; i++) {
      if (r.m.mode === 'armed') r.waiting.push(agent);
      else r.held.push({ agent, atMs: r.now });
    }
  });

/**
 * The runs waiting ask on `holder`'s process, as its link does: a fresh read of the mode (not armed:
 * held), a permit from stock, else one lease for the rest with a block ahead of demand. With
 * `crash`, the process dies after the supervisor decided, before any run started: nothing it was
 * granted is used or handed back.
 */
const ask = (holder: Holder, ahead: number, crash: boolean) =>
  cmd(`ask(${holder},ahead=${ahead}${crash ? ',crash' : ''})`, (_model, r) => {
    const stock = r.stocks.get(holder)!;
    const runs = r.waiting.splice(0);
    if (r.m.mode !== 'armed') {
      stock.drain();
      for (const agent of runs) r.held.push({ agent, atMs: r.now });
      return;
    }
    const rest: Agent[] = [];
    for (const agent of runs) {
      stock.noteDemand(agent, r.now);
      if (stock.take(agent, r.now)) startRun(r, agent);
      else rest.push(agent);
    }
    for (const agent of AGENTS) {
      const want = rest.filter((x) => x === agent).length;
      if (!want) continue;
      const asked = r.now;
      const s = apply(r, { kind: 'lease', requests: { [agent]: want }, prefetch: { [agent]: ahead }, holder, holdMs: holdFor(agent) });
      if (crash) {
        r.stocks.set(holder, newStock());
        for (let i = 0; i < want; i++) r.waiting.push(agent); // Temporal retries the runs' first steps elsewhere
        continue;
      }
      const granted = s.reply.grants[agent] ?? 0;
      for (let i = 0; i < want; i++) {
        if (i < granted) startRun(r, agent);
        else if (s.reply.mode !== 'armed') r.held.push({ agent, atMs: r.now });
        else r.waiting.push(agent); // held on a cap: it asks again when the window slides
      }
      const n = s.reply.prefetched?.[agent] ?? 0;
      if (n) stock.add(agent, n, s.reply.atMs!, asked, holdFor(agent));
    }
  });

/** Time passes; each process hands back what expired in its stock (the signal arrives, or is lost). */
const advance = (ms: number, lost: boolean) =>
  cmd(`advance(${ms}${lost ? ',lost' : ''})`, (_model, r) => {
    r.now += ms;
    for (const [holder, stock] of r.stocks) {
      const blocks = stock.expired(r.now);
      if (blocks.length && !lost) apply(r, { kind: 'unused', holder, blocks });
    }
    apply(r, { kind: 'tick' });
  });

const halt = (drain: boolean) =>
  cmd(`halt(${drain ? 'drain' : 'halt'})`, (model, r) => {
    apply(r, { kind: 'halt', who: 'ann', reason: 'model', drain });
    if (model.mode === 'armed') model.mode = drain ? 'draining' : 'halted';
    else if (!drain) model.mode = 'halted';
    // Each process reads the halt and hands its stock back (./permit-leaser.ts).
    for (const [holder, stock] of r.stocks) {
      const blocks = stock.drain();
      if (blocks.length) apply(r, { kind: 'unused', holder, blocks });
    }
    holdWaiting(r);
  });

/** Runs of `agent` closed, `failed` of them failed: the error rate may trip the breaker. */
const closed = (agent: Agent, runs: number, failed: number) =>
  cmd(`closed(${agent},${runs},${failed})`, (model, r) => {
    const closures = Array.from({ length: runs }, (_, i) => ({
      agent,
      reason: i < failed ? 'failed' : 'success',
      closeMs: r.now - 1500,
      costUsd: 0,
      tokens: 0,
    }));
    // The watch in flight answers (or, with none, one that came back just now): settled, it saw every run open until a second ago.
    apply(r, { kind: 'observed', read: { closures, truncated: false, toMs: r.now - 1000, coveredToMs: r.now - 1000, settled: true } });
    for (const c of closures) model.closures.push({ agent, closeMs: c.closeMs, bad: c.reason === 'failed' });
    if (model.mode !== 'halted' && errorRateOver(model, r.now)) model.mode = 'halted';
    if (r.m.mode !== 'armed') holdWaiting(r);
  });

const reset = () =>
  cmd('reset', (model, r) => {
    const input: Input = { kind: 'reset', who: 'ann', reason: 'model' };
    if (refusal(r.m, input)) {
      assert.equal(model.mode, 'armed', 'a reset is refused only when armed');
      return;
    }
    apply(r, input);
    model.mode = 'armed';
    model.wakeTimes = [];
    model.closures = [];
  });

const release = (action: 'release' | 'discard') =>
  cmd(`release(${action})`, (model, r) => {
    const input: Input = { kind: 'release', who: 'ann', reason: 'model', action };
    if (refusal(r.m, input)) {
      assert.notEqual(model.mode, 'armed', 'a release is refused only while halted or draining');
      return;
    }
    apply(r, input);
    const held = r.held.splice(0);
    if (action === 'discard') {
      r.discarded += held.length;
      model.discarded += held.length;
    } else for (const h of held) r.waiting.push(h.agent);
  });

/** The workflow continues as new: the state goes through JSON into a new run of the machine. */
const continueAsNew = () =>
  cmd('continue-as-new', (_model, r) => {
    r.m = start(JSON.parse(JSON.stringify(continueWith(r.m))), r.now);
  });

/** A workflow task fails between the machine's decision and its commands: Temporal makes the step again from the same state. */
const taskCrash = (agent: Agent) =>
  cmd(`task-crash(${agent})`, (_model, r) => {
    const before = JSON.stringify(r.m);
    const input: Input = { kind: 'lease', requests: { [agent]: 1 }, prefetch: { [agent]: 3 }, holder: 'p1', holdMs: holdFor(agent) };
    const lost = transition(r.m, input, r.now);
    assert.equal(JSON.stringify(r.m), before, 'a step leaves the state it was given as it was');
    const again = transition(r.m, input, r.now);
    assert.deepEqual(again, lost, 'the step made again decides the same');
  });

const advanceArb = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 2_500 }), fc.constantFrom(8_000, 9_500, 9_800, 10_000, 30_000, 57_000, 58_500, 59_000, 59_500, 60_000)),
    fc.boolean(),
  )
  .map(([ms, lost]) => advance(ms, lost));
const wakesArb = fc.tuple(fc.constantFrom(...AGENTS), fc.integer({ min: 1, max: 10 })).map(([a, n]) => wakes(a, n));
const askArb = fc.tuple(fc.constantFrom(...HOLDERS), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 9 })).map(([h, k, c]) => ask(h, k, c === 0));
// Wakes, asks and time come most often (listed thrice); a person, a trip, a continue-as-new and a crash now and then.
const commands = [
  wakesArb,
  wakesArb,
  wakesArb,
  askArb,
  askArb,
  askArb,
  advanceArb,
  advanceArb,
  advanceArb,
  fc.boolean().map(halt),
  fc.tuple(fc.constantFrom(...AGENTS), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 6 })).map(([a, n, f]) => closed(a, n, Math.min(n, f))),
  fc.constant(null).map(reset),
  fc.constantFrom('release' as const, 'discard' as const).map(release),
  fc.constant(null).map(continueAsNew),
  fc.constantFrom(...AGENTS).map(taskCrash),
];

const setup = () => ({
  model: { mode: 'armed', wakeTimes: [], closures: [], created: 0, discarded: 0 } as Model,
  real: {
    m: start({ taskQueue: 'q', policy: POLICY }, T0),
    now: T0,
    stocks: new Map(HOLDERS.map((h) => [h, newStock()])),
    waiting: [],
    held: [],
    starts: [],
    discarded: 0,
    watches: 0,
  } as Real,
});

test('the supervisor and the permit stocks keep their invariants over generated interleavings', () => {
  fc.assert(
    fc.property(fc.commands(commands, { maxCommands: 40, size: 'max' }), (cmds) => fc.modelRun(setup, cmds)),
    { numRuns: Number(process.env.MODEL_RUNS ?? 1000) },
  );
});
