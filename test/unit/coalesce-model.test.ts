import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { CoalescerState, Offer, OfferAnswer, RunEnded, SteerAnswer } from '../../src/core/coalesce-types';
import type { CoalescePolicy } from '../../src/core/policy';
import type { TerminalReason } from '../../src/core/run-types';
import { decideFirst, ranItsEvents } from '../../src/core/coalesce-batch';
import { CoalescerMachine, initialState, type CoalescerIdentity, type NextAction } from '../../workflows/coalescer/machine';
import { carriedInput } from '../../workflows/coalescer/carry';
import type { Adopt } from '../../src/core/messages';
import { runEndedOf, toOfferAgain, withOwnIds } from '../../activities/coalescer/recover';
import { keyHash } from '../../workflows/coalescer/seen-codec';

/*
 * A model-based test of the coalescer: the machine (workflows/coalescer/machine.ts) driven by a small
 * simulated world that stands in for its Temporal shell (workflows/coalescer/workflow.ts), its runs
 * (workflows/run: record.ts, steer.ts, agent-loop.ts) and the operator. fast-check generates command
 * lists (offers, redeliveries and retried offers, time, model turns, commits, run ends with each
 * terminal reason, runs terminated or reset by hand, a coalescer terminated by hand and its recovery,
 * continue-as-new, close, rearm, worker crashes, messages delivered in any order) with a `whileRunning` drawn per list,
 * and the world checks DESIGN.md invariant 6 as the issue states it: the safety parts after every
 * command, the liveness parts after a `quiesce` command (one ends every list):
 *  1. every accepted event (first answer started/coalesced/steered) is, once quiescent, seen by
 *     exactly one run's model, or was answered from its first decision (a redelivery);
 *  2. within the dedup horizon an event key has one decision: a redelivery gets the same decision and
 *     run (for a steered event the run did not take: the run that took it); other inputs: `mismatch`;
 *  3. no key stuck: after quiesce, a new event leads to a run that starts and sees it;
 *  4. at most one run live per wake key; a start never meets an existing workflow ID.
 *
 * The world (what the shell and Temporal do, reduced to what the machine sees):
 * - Temporal's workflow IDs: the run IDs in retention (closed ones too: REJECT_DUPLICATE; a rearm
 *   deletes one, as `wakegate rearm` does after the coalescer's `forget`).
 * - The coalescer's execution: a CoalescerMachine, its input state and the log of every call made on
 *   it (its history). Continue-as-new: the state through JSON into a new machine (only when `next()`
 *   says so: owed steps go out first). Close: `next()` says `close` and it is idle; the next offer
 *   starts a new chain (`initialState(now, chain)`). Terminated by hand: its state is gone until the
 *   supervisor's recovery (`recover`, and always before quiesce) gives its dedup table and its live
 *   run to the coalescer's chain (`adopt`: a foreign run if that chain has a live run of its own),
 *   which asks that run to report its end (refused once it has closed: a look, not awaited); then
 *   offers its waiting events again by signal (recover.ts `toOfferAgain`: its pending batch, as
 *   accepted, so never skipped; its open skips under their own offer ids; not the restart events of
 *   a run that closed having run them; the events of a live run that never started, which this shell
 *   cannot leave: it performs each start in the step that decides it), answered to no caller; then
 *   tells the end of a run that has closed. A rearm is refused while the coalescer's newest execution
 *   waits for its recovery (the CLI's), and of a run a chain awaiting its recovery held (a stated limit).
 * - A worker crash between a decision and its command: the workflow task fails, nothing it decided
 *   reaches the server, and replay decides again: the machine is rebuilt from its input and log
 *   (checked equal to the live one) and `next()` runs again.
 * - A run: its batch (its model sees it at its first turn), an inbox of steered events (seen only when
 *   a turn drains them), commit (the inbox closes, a supersede no longer cancels it), an end (its
 *   runEnded signal, with `seen` and `commitBegan`, goes in flight), terminated by hand (no signal),
 *   reset (a new execution of the same ID from its start, its updates re-applied).
 * - Messages in flight, delivered by a `deliver` command in any order (every one in `quiesce`): runEnded
 *   signals; the watch of a child's result by the execution that started it (lost with that execution);
 *   the `steer` activity (it applies the update when it runs and brings the answer back to the
 *   execution that scheduled it). Before the change the shell awaits that answer (no other step, no
 *   continue-as-new meanwhile); after it the loop goes on, and the activity may give up
 *   (`dropSteer`: `steerFailed`). After the change the shell also looks at its live run and its
 *   foreign runs through Temporal on a timer (`watchLive`, and in `quiesce`): a run closed without
 *   telling it is reported. A `rearm`'s forget looks at the run first while the coalescer holds it
 *   (live or foreign), before the run is deleted.
 *
 * What invariant 1 counts, and what it leaves out by construction:
 * - a model's view counts toward "exactly one" unless its work was discarded: a run that ended
 *   cancelled (superseded or killed), a run terminated by hand, an execution a reset replaced;
 *   a view of an event whose offer still waits for its answer counts once the offer is answered
 *   (a skip refused is decided again into a batch that may start first: `unanswered`);
 * - a run that fails, is killed or is terminated before its first turn loses its batch (batch events
 *   are the run's once it starts; only steered events go back to the coalescer);
 * - a coalescer terminated by hand loses what it held in memory, but the events the recovery offers
 *   again (its pending batch), which must run as accepted, and the steered events its live run held,
 *   which the chain that adopts that run must run (unless a new chain decided their key afresh before
 *   the recovery); other events it had accepted and no model had seen yet are left out, and its
 *   decisions (invariant 2) are out of scope. Two chains may each decide one key in the window
 *   between a termination and its recovery (docs/ARCHITECTURE.md: at least once): an event offered
 *   again that meets the other decision may go unseen (that decision's event is checked), never be
 *   seen by two runs. Runs live at that moment are orphans its successor cannot know of until the
 *   recovery, left out of "one run live" (invariant 4);
 * - events overflowing `maxEventsPerRun` (the policy here never reaches it).
 */

type Ev = Offer['event'];
type Overlap = CoalescePolicy['whileRunning'];
type EndReason = Extract<TerminalReason, 'success' | 'no_op' | 'budget_exhausted' | 'escalated' | 'cancelled' | 'failed'>;

export type Cmd =
  | { k: 'offer'; events: { key: number; fp: number }[] }
  | { k: 'redeliver'; pick: number; retry: boolean }
  | { k: 'advance'; ms: number }
  | { k: 'turn'; run: number }
  | { k: 'commit'; run: number }
  | { k: 'end'; run: number; reason: EndReason }
  | { k: 'terminateRun'; run: number }
  | { k: 'resetRun'; run: number }
  | { k: 'deliver'; pick: number }
  | { k: 'watchLive' }
  | { k: 'dropSteer'; pick: number; applied: boolean }
  | { k: 'terminateCoalescer' }
  | { k: 'recover'; late: boolean }
  | { k: 'continueAsNew' }
  | { k: 'close' }
  | { k: 'rearm'; run: number }
  | { k: 'crash' }
  | { k: 'quiesce' };

const T0 = Date.parse('2026-12-05T10:00:00Z');
const KEYS = 5;
const FPS = ['fpA', 'fpB'];
const POLICY = { debouncePeriodMs: 100, maxWaitMs: 400, idleCloseMs: 500, dedupHorizonMs: 1000, maxEventsPerRun: 100 };

/**
 * Sequences that meet a known defect can be set aside (`COALESCE_MODEL_MASK=collision,...`) to look
 * for the next one behind it; the file's own tests never set it.
 */
const MASKED = new Set((process.env.COALESCE_MODEL_MASK ?? '').split(',').filter(Boolean));

const startState = initialState;

type MachineCall =
  | { op: 'offer'; offer: Offer; now: number }
  | { op: 'next'; now: number; can: boolean }
  | { op: 'ended'; body: RunEnded; now: number }
  | { op: 'steerAnswered'; runKey: string; answer: SteerAnswer; events: Ev[]; now: number }
  | { op: 'steerFailed'; runKey: string }
  | { op: 'skipsRecorded'; runKey: string; delivered: boolean; now: number }
  | { op: 'forget'; runKey: string }
  | { op: 'adopt'; left: Adopt };

interface Coalescer {
  m: CoalescerMachine;
  exec: number;
  chain: string;
  /** Its input state (JSON) and every call made on it since: what replay rebuilds it from. */
  input: string;
  log: MachineCall[];
  timer?: number;
  /** Runs this execution asked to report their end by signal (`reportEnd`, before it continued as new). */
  asked?: Set<string>;
}

interface SimRun {
  runKey: string;
  /** Execution number: a reset makes a new one. */
  exec: number;
  status: 'running' | 'completed' | 'terminated';
  batch: Ev[];
  /** Steered events taken and not yet given to the model. */
  inbox: Ev[];
  taken: Ev[];
  /** Keys of steered events this execution's model was given. */
  given: Set<string>;
  firstTurn: boolean;
  committing: boolean;
  /** Takes no more steered events. */
  closed: boolean;
  reason?: EndReason;
  how?: 'own' | 'supersede' | 'terminated';
  startedBy: number;
  updates: Map<string, SteerAnswer>;
  /** Keys of the skips recorded on it (the coalescer's record signal, delivered while it was open). */
  skipped: Set<string>;
  /** Live when its coalescer was terminated by hand: a fresh coalescer cannot know it. */
  orphan?: boolean;
  /** Held as live (or foreign) by the chain a recovery gave it to. */
  adopted?: boolean;
  /**
   * Asked to report its end by signal (`reportEnd`): by the execution that started it before that one
   * continued as new, or by the chain that adopted it. Not asked, it signals only when it failed; the
   * execution that started it takes its end from the child's result.
   */
  asked?: boolean;
}

interface Accepted {
  did: string;
  key: string;
  chain: string;
  answer: OfferAnswer;
  /** Each model that saw it: the run and its execution. */
  views: { run: SimRun; exec: number }[];
  exempt?: string;
  /** Lost with its coalescer, then given back by the recovery (the adopted run held it steered). */
  recovered?: boolean;
  /** Why it may go unseen (still never seen by two runs). */
  unseen?: string;
}

interface KeyRecord {
  fp: string;
  atMs: number;
  answer: OfferAnswer;
  chain: string;
  accepted?: Accepted;
  void?: string;
}

type Msg =
  | { k: 'ended'; body: RunEnded }
  | { k: 'watch'; exec: number; body: RunEnded }
  | { k: 'steer'; exec: number; runKey: string; id: string; events: Ev[] }
  /** A look at a run through Temporal (activity `runEnd`) that the execution did not await: what it finds is read when it runs. */
  | { k: 'look'; exec: number; runKey: string };

/** What a coalescer terminated by hand left for the supervisor's recovery: its last state (a query on the terminated execution). */
interface Left {
  chain: string;
  state: CoalescerState;
  openSkips: ReturnType<CoalescerMachine['skips']['openSkips']>;
}

type Live = NonNullable<CoalescerState['running']>;
const TERMINATED = 'its coalescer was terminated by hand';
const DECIDED_ELSEWHERE = 'offered again by a recovery, it was answered from a decision of its key another chain made in a termination window';
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const ACCEPTING = new Set(['started', 'coalesced', 'steered']);

class Violation extends Error {}

/** The world: the clock, Temporal's IDs, the coalescer's executions, the runs, the messages in flight. */
export class World {
  now = T0;
  readonly self: CoalescerIdentity;
  coal?: Coalescer;
  private chains = 0;
  private execs = 0;
  private dids = 0;
  private fresh = 0;
  readonly ids = new Set<string>();
  readonly runs = new Map<string, SimRun>();
  readonly allRuns: SimRun[] = [];
  msgs: Msg[] = [];
  /** The coalescer's newest execution was terminated by hand (no chain has started since). */
  private byHand = false;
  /** Coalescers terminated by hand that the supervisor's recovery has not read yet. */
  left: Left[] = [];
  /** Live runs a chain adopted and has yet to ask to report their end (report.ts: the loop's first step). */
  private owedAsks: { exec: number; runKey: string }[] = [];
  /** Offers answered `skipped` whose record has not reached the run yet: their update waits. */
  waiting: { d: { key: string; fp: string; did: string; retry?: boolean }; offer: Offer; chain: string; atMs: number }[] = [];
  /** Every delivery offered: its first answer, and the accepted event it was (or was answered from). */
  readonly deliveries: { key: string; fp: string; did: string; chain?: string; answer?: OfferAnswer; accepted?: Accepted; rec?: KeyRecord }[] = [];
  /** Each chain terminated by hand: how many deliveries had been made by then (those after reached other chains). */
  private readonly terminatedAt = new Map<string, number>();
  readonly accepted = new Map<string, Accepted>();
  /**
   * What runs did with the event of an offer still waiting for its answer, by delivery id: taken by its
   * accepted event once answered. The update waits for every open skip of its key (handlers.ts), so a
   * skip refused and decided again into a batch may start, and be seen, before another skip of its key
   * (a redelivery skipped afresh on the next run, after a rearm forgot the first) settles.
   */
  private readonly unanswered = new Map<string, Pick<Accepted, 'views' | 'exempt'>>();
  readonly keys = new Map<string, KeyRecord>();
  readonly trace: string[] = [];

  constructor(
    overlap: Overlap,
    private readonly tracing = true,
  ) {
    this.self = { agent: 'agent', wakeKey: 'wk', policy: { ...POLICY, whileRunning: overlap } };
  }

  /** A violation of invariant `inv`; `tag` names its kind (COALESCE_MODEL_MASK). */
  fail(tag: string, inv: string, msg: string): never {
    if (MASKED.has(tag)) fc.pre(false);
    throw new Violation(`invariant ${inv}: ${msg}\n  trace (last 40):\n    ${this.trace.slice(-40).join('\n    ')}`);
  }

  /** Traced only when a failing list is played again to report it. */
  private note(s: string) {
    if (this.tracing) this.trace.push(`t+${this.now - T0} ${s}`);
  }

  // ---- the coalescer's execution and its shell ----

  private freshCoalescer(): Coalescer {
    const chain = `c${++this.chains}`;
    const state = startState(this.now, chain);
    this.coal = { m: new CoalescerMachine(this.self, state), exec: ++this.execs, chain, input: JSON.stringify(state), log: [] };
    this.byHand = false;
    this.note(`coalescer ${chain} starts (exec ${this.coal.exec})`);
    return this.coal;
  }

  /** The shell's loop: `next()` and perform, until it waits (or closes, or awaits a steer's answer). */
  pump(can = false): void {
    for (let i = 0; i < 200; i++) {
      const c = this.coal;
      if (!c) return;
      this.sendOwedAsks(c);
      c.log.push({ op: 'next', now: this.now, can });
      const step: NextAction = c.m.next(this.now, can);
      if (step.kind !== 'wait')
        this.note(
          `step ${JSON.stringify(step.kind === 'start' ? { kind: 'start', runKey: step.batch.runKey } : step.kind === 'steer' ? { ...step, events: step.events.map((e) => e.eventKey) } : step)}`,
        );
      switch (step.kind) {
        case 'supersede':
          this.supersede(step.runKey);
          break;
        case 'record-skipped':
          this.recordSkips(
            c,
            step.runKey,
            step.events.map((e) => e.eventKey),
          );
          break;
        case 'steer':
          this.msgs.push({ k: 'steer', exec: c.exec, runKey: step.runKey, id: step.id, events: clone(step.events) });
          break;
        case 'start':
          this.start(step.batch.runKey, step.batch.events, c);
          break;
        case 'continue-as-new':
          if (!this.handOver(c)) break; // its run had closed: its end taken from the child's result, look again
          this.continueAsNew(c);
          can = false;
          break;
        case 'close':
          if (c.m.idle) {
            this.coal = undefined;
            return;
          }
          break;
        case 'wait':
          c.timer = step.untilMs;
          return;
        default:
          throw new Error(`unknown step ${JSON.stringify(step)}`);
      }
    }
    this.fail('loop', '3', 'the shell loop never waits');
  }

  /**
   * Before continuing as new, the shell asks the live run it started to report its end by signal
   * (workflows/coalescer/report.ts). Delivered while the run is open (its end, known or not yet, is
   * then signalled: the run's handler reports an end already known, and a completion the ask raced
   * is refused and replayed with the ask first); refused once it has closed: the execution takes the
   * run's end from the child's result it follows (in flight, or already taken) and looks again.
   */
  private handOver(c: Coalescer): boolean {
    const runKey = c.m.state.running?.runKey;
    const run = runKey ? this.runs.get(runKey) : undefined;
    if (!runKey || !run || run.startedBy !== c.exec || c.asked?.has(runKey)) return true;
    if (run.status === 'running' && this.ids.has(runKey)) {
      run.asked = true;
      (c.asked ??= new Set()).add(runKey);
      this.note(`ask ${short(runKey)} to report its end (continue-as-new)`);
      return true;
    }
    this.note(`ask ${short(runKey)} refused: it has closed; its child result is awaited`);
    const i = this.msgs.findIndex((m) => m.k === 'watch' && m.exec === c.exec && m.body.runKey === runKey);
    if (i < 0) return true;
    const msg = this.msgs.splice(i, 1)[0] as Extract<Msg, { k: 'watch' }>;
    c.log.push({ op: 'ended', body: clone(msg.body), now: this.now });
    c.m.runEnded(clone(msg.body), this.now);
    return false;
  }

  private continueAsNew(c: Coalescer): void {
    // As the shell carries it: the seen table packed, within its bound (carry.ts).
    const state = JSON.parse(JSON.stringify(carriedInput(this.self, c.m).state)) as CoalescerState;
    this.coal = { m: new CoalescerMachine(this.self, state), exec: ++this.execs, chain: c.chain, input: JSON.stringify(state), log: [] };
  }

  private replay(c: Coalescer): CoalescerMachine {
    const m = new CoalescerMachine(this.self, JSON.parse(c.input) as CoalescerState);
    for (const call of c.log) {
      if (call.op === 'offer') m.offer(clone(call.offer), call.now);
      else if (call.op === 'next') m.next(call.now, call.can);
      else if (call.op === 'ended') m.runEnded(clone(call.body), call.now);
      else if (call.op === 'steerAnswered') m.steerAnswered(call.runKey, clone(call.answer), clone(call.events), call.now);
      else if (call.op === 'steerFailed') (m as unknown as { steerFailed?: (k: string) => void }).steerFailed?.(call.runKey);
      else if (call.op === 'skipsRecorded') m.skipsRecorded(call.runKey, call.delivered, call.now);
      else if (call.op === 'adopt') m.adopt(clone(call.left));
      else m.forgetRun(call.runKey);
    }
    return m;
  }

  private runEnded(body: RunEnded): void {
    const c = this.coal;
    if (!c) return; // a signal to a closed workflow is dropped (the run ignores the failure)
    c.log.push({ op: 'ended', body: clone(body), now: this.now });
    c.m.runEnded(clone(body), this.now);
    this.pump();
  }

  // ---- Temporal's side of the shell's steps ----

  /**
   * The record of skips, a signal the shell awaits: delivered to a run still open (the skips stand),
   * refused by a closed one (the machine decides them again). Then the offers that waited on them
   * are answered (the update handler asks the machine again).
   */
  private recordSkips(c: Coalescer, runKey: string, keys: string[]): void {
    const run = this.runs.get(runKey);
    const delivered = run !== undefined && run.status === 'running' && this.ids.has(runKey);
    if (delivered) for (const k of keys) run.skipped.add(k);
    this.note(`record of skips ${keys.join(',')} ${delivered ? 'delivered to' : 'refused by'} ${short(runKey)}`);
    c.log.push({ op: 'skipsRecorded', runKey, delivered, now: this.now });
    c.m.skipsRecorded(runKey, delivered, this.now);
    const still = [];
    for (const w of this.waiting) {
      if (c.m.skips.open(w.offer.event.eventKey)) {
        still.push(w);
        continue;
      }
      c.log.push({ op: 'offer', offer: clone(w.offer), now: this.now });
      this.judge(w.d, c.m.offer(clone(w.offer), this.now), w.chain, w.atMs);
    }
    this.waiting = still;
  }

  private start(runKey: string, events: Ev[], c: Coalescer): void {
    if (this.ids.has(runKey))
      this.fail(
        'collision',
        '4',
        `start of ${runKey} meets an existing workflow ID: the shell swallows WorkflowExecutionAlreadyStartedError and waits for a run that never reports`,
      );
    const run: SimRun = {
      runKey,
      exec: 1,
      status: 'running',
      batch: clone(events),
      inbox: [],
      taken: [],
      given: new Set(),
      firstTurn: false,
      committing: false,
      closed: false,
      startedBy: c.exec,
      updates: new Map(),
      skipped: new Set(),
    };
    this.ids.add(runKey);
    this.runs.set(runKey, run);
    this.allRuns.push(run);
  }

  /** Signal then cancel: a run that has begun committing is let finish. */
  private supersede(runKey: string): void {
    const run = this.runs.get(runKey);
    if (!run || run.status !== 'running' || run.committing) return;
    this.endRun(run, 'cancelled', 'supersede');
  }

  /** The `steer` update, run by the activity: the run takes or refuses; a closed run's result says what it took. */
  private applySteer(msg: Extract<Msg, { k: 'steer' }>): SteerAnswer {
    const keys = msg.events.map((e) => e.eventKey);
    const run = this.runs.get(msg.runKey);
    if (!run || !this.ids.has(msg.runKey) || run.status === 'terminated') return { accepted: [], refused: keys };
    if (run.status === 'completed') {
      const took = new Set(run.given);
      return { accepted: keys.filter((k) => took.has(k)), refused: keys.filter((k) => !took.has(k)) };
    }
    const prior = run.updates.get(msg.id);
    if (prior) return prior;
    let answer: SteerAnswer;
    if (run.closed) answer = { accepted: [], refused: keys };
    else {
      const holds = (k: string) => run.batch.some((e) => e.eventKey === k) || run.taken.some((e) => e.eventKey === k);
      const fresh = msg.events.filter((e) => !holds(e.eventKey));
      run.inbox.push(...clone(fresh));
      run.taken.push(...clone(fresh));
      answer = { accepted: keys, refused: [] };
    }
    run.updates.set(msg.id, answer);
    this.note(`run ${short(run.runKey)} steer ${msg.id}: ${JSON.stringify(answer)}`);
    return answer;
  }

  private deliver(i: number, giveUp?: 'before' | 'after'): void {
    const msg = this.msgs.splice(i, 1)[0]!;
    if (msg.k === 'ended') {
      this.note(`deliver runEnded ${short(msg.body.runKey)} ${JSON.stringify({ ...msg.body, runKey: undefined })}`);
      this.runEnded(msg.body);
    } else if (msg.k === 'watch') {
      if (this.coal?.exec !== msg.exec) return; // its watcher continued as new or closed
      this.note(`watch reports ${short(msg.body.runKey)} ${msg.body.terminalReason}`);
      this.runEnded(msg.body);
    } else if (msg.k === 'look') {
      if (this.coal?.exec !== msg.exec) return; // not awaited: lost with its execution
      const end = this.endNow(msg.runKey);
      this.note(`look at ${short(msg.runKey)} finds ${end ? `it ended ${end.terminalReason}` : 'it open'}`);
      if (end) this.runEnded(end);
    } else {
      const answer = giveUp === 'before' ? undefined : this.applySteer(msg);
      const c = this.coal;
      if (!c || c.exec !== msg.exec) return; // the execution that scheduled it is gone
      if (!answer || giveUp) {
        c.log.push({ op: 'steerFailed', runKey: msg.runKey });
        (c.m as unknown as { steerFailed?: (k: string) => void }).steerFailed?.(msg.runKey);
      } else {
        c.log.push({ op: 'steerAnswered', runKey: msg.runKey, answer: clone(answer), events: clone(msg.events), now: this.now });
        c.m.steerAnswered(msg.runKey, clone(answer), clone(msg.events), this.now);
      }
      this.pump();
    }
  }

  // ---- runs ----

  private view(run: SimRun, e: Ev): void {
    this.noted(e.deliveryIds[0]!)?.views.push({ run, exec: run.exec });
  }

  /** The accepted event of a delivery, or what is noted for it while its offer waits for its answer. */
  private noted(did: string): Pick<Accepted, 'views' | 'exempt'> | undefined {
    const a = this.accepted.get(did);
    if (a || !this.waiting.some((w) => w.d.did === did && !w.d.retry)) return a;
    if (!this.unanswered.has(did)) this.unanswered.set(did, { views: [] });
    return this.unanswered.get(did);
  }

  /** A model turn: the batch at the first, then whatever steered events wait. */
  turn(run: SimRun): void {
    if (run.status !== 'running' || run.committing) return;
    if (!run.firstTurn) {
      run.firstTurn = true;
      for (const e of run.batch) this.view(run, e);
    }
    for (const e of run.inbox) {
      this.view(run, e);
      run.given.add(e.eventKey);
    }
    run.inbox = [];
  }

  /** The final answer, with nothing waiting (else the model is asked again first): the inbox closes, effects start. */
  commit(run: SimRun): void {
    if (run.status !== 'running' || run.committing) return;
    if (!run.firstTurn || run.inbox.length) this.turn(run);
    run.closed = true;
    run.committing = true;
  }

  endRun(run: SimRun, reason: EndReason, how: 'own' | 'supersede'): void {
    if (run.status !== 'running') return;
    if (how === 'own' && reason === 'success') this.commit(run); // success is the commit stage's end
    if (how === 'own' && reason !== 'failed' && reason !== 'cancelled') {
      if (!run.firstTurn) this.turn(run);
      // A final answer given while steered events wait is asked again with them.
      if (reason === 'no_op' && run.inbox.length) this.turn(run);
    }
    run.closed = true;
    run.status = 'completed';
    run.reason = reason;
    run.how = how;
    if (!run.firstTurn && how === 'own') this.exemptBatch(run, `its run ended ${reason} before its first turn`);
    const body = this.endOf(run);
    this.note(`run ${short(run.runKey)} ends ${reason} (${how}) ${JSON.stringify({ ...body, runKey: undefined })}`);
    // Its signal only when asked (or failed: a failed child's result carries no facts, so it signals first).
    if (run.asked || reason === 'failed') this.msgs.push({ k: 'ended', body });
    // The execution that started the run follows its result (child.result()), which says all a signal would.
    this.msgs.push({ k: 'watch', exec: run.startedBy, body });
  }

  terminateRun(run: SimRun): void {
    if (run.status !== 'running') return;
    run.status = 'terminated';
    run.how = 'terminated';
    run.closed = true;
    if (!run.firstTurn) this.exemptBatch(run, 'its run was terminated before its first turn');
    this.note(`run ${short(run.runKey)} terminated by hand`);
    // Its starting execution's watch of the child sees it fail; after a continue-as-new, only the
    // planned shell's look at its live run (`watchLive`) finds it.
    this.msgs.push({ k: 'watch', exec: run.startedBy, body: { runKey: run.runKey, terminalReason: 'failed' } });
  }

  /** A new execution of the same ID from its start; its updates (the steered events) are re-applied. */
  resetRun(run: SimRun): void {
    if (run.status !== 'running') return;
    run.exec += 1;
    run.firstTurn = false;
    run.committing = false;
    run.closed = false;
    run.inbox = clone(run.taken);
    run.given = new Set();
    this.note(`run ${short(run.runKey)} reset`);
  }

  /**
   * What a closed run says of its end (its signal, its result): the steered events its model was given
   * and whether it began committing. Sent under both names the change used (`committed`, `commitBegan`).
   */
  private endOf(run: SimRun): RunEnded {
    const end = { runKey: run.runKey, terminalReason: run.reason ?? 'failed', seen: [...run.given], committed: run.committing, commitBegan: run.committing };
    return end;
  }

  /**
   * The planned shell's look at its live run through Temporal (activity `runEnd`, on a timer while it
   * waits): a run closed without telling it, or deleted, is reported to the current execution.
   */
  watchLive(): void {
    for (const runKey of this.watched()) {
      const end = this.endNow(runKey);
      if (!end) continue;
      this.note(`watch finds ${short(runKey)} ended ${end.terminalReason}`);
      this.runEnded(end);
    }
  }

  /** The runs the shell's watch looks at (workflows/coalescer/watch.ts): its live run and its foreign runs. */
  private watched(): string[] {
    const state = this.coal?.m.state;
    return [state?.running?.runKey, ...(state?.foreign ?? []).map((f) => f.runKey)].filter((k): k is string => k !== undefined);
  }

  /** What a look at a run through Temporal finds (activities/coalescer/watch.ts `runEnd`): null while it is open. */
  private endNow(runKey: string): RunEnded | null {
    const run = this.runs.get(runKey);
    if (!run || !this.ids.has(runKey)) return { runKey, terminalReason: 'failed' };
    if (run.status === 'running') return null;
    if (run.status === 'completed') return this.endOf(run);
    return { runKey, terminalReason: 'failed' };
  }

  /**
   * The supervisor's recovery of each coalescer terminated by hand (activities/coalescer/recover.ts):
   * its dedup table, but for the events it offers again, to the coalescer's ID (a new chain if none
   * runs), with its live run if the recovery found it open; then those events, offered again by
   * signal; then that run's end, if it has closed.
   * `late`: the recovery found the run open a moment before it closed, so the chain adopts it live
   * though it has closed by the time it asks it to report its end (the ask is refused).
   */
  recover(late: boolean): void {
    for (const l of this.left.splice(0)) {
      const c = this.coal ?? this.freshCoalescer();
      const running = l.state.running;
      // Its live run, then the foreign runs it held (live runs of chains terminated before it).
      const held = [running, ...(l.state.foreign ?? [])].filter((r): r is Live => r !== undefined);
      const simOf = (r: Live) => this.runs.get(r.runKey);
      const isOpen = (r: Live) => {
        const run = simOf(r);
        return run !== undefined && this.ids.has(run.runKey) && (run.status === 'running' || late);
      };
      // A phantom: its live run's start never reached Temporal (none in the terminated execution's
      // history, recover.ts `startedIn`), its events wait too. The shell here performs each start in
      // the step that decides it (a crash replays the step), so a live run always started: never a phantom.
      const phantom = running !== undefined && !this.allRuns.some((r) => r.runKey === running.runKey);
      // What a look finds of a closed run (recover.ts `endOf`): its end, with its result's facts when it
      // completed; nothing for one not found (deleted: a person re-armed it), nor for a phantom.
      const endOfHeld = (r: Live): RunEnded | undefined => {
        const run = simOf(r);
        if (!run || run.status === 'running' || !this.ids.has(r.runKey) || (r === running && phantom)) return undefined;
        const result = run.status === 'completed' ? { terminalReason: run.reason, steered: [...run.given], commitBegan: run.committing } : undefined;
        return runEndedOf(r, result as Parameters<typeof runEndedOf>[1]);
      };
      // The runs closed before the recovery whose ends say they ran their events: their restart events are done.
      const ran = held
        .filter((r) => !isOpen(r))
        .map(endOfHeld)
        .filter((e): e is RunEnded => e !== undefined && ranItsEvents(e))
        .map((e) => e.runKey);
      const offers = withOwnIds(toOfferAgain({ state: l.state, openSkips: l.openSkips }, phantom, l.chain, ran), l.chain);
      const except = offers.map((o) => o.event.eventKey);
      const { seen, seenOpeners, chain, newestVersion } = l.state;
      const foreignOpen = (l.state.foreign ?? []).filter(isOpen);
      const left: Adopt = {
        seen,
        ...(seenOpeners ? { seenOpeners } : {}),
        ...(chain ? { chain } : {}),
        newestVersion,
        except,
        ...(running && isOpen(running) ? { live: running } : {}),
        ...(foreignOpen.length ? { foreign: foreignOpen } : {}),
      };
      const opened = held.filter(isOpen).map((r) => short(r.runKey));
      if (seen.length || left.live || left.foreign) {
        this.note(`recovery of ${l.chain}: ${c.chain} adopts its table${opened.length ? ` and its open runs ${opened.join(' ')}` : ''}`);
        c.log.push({ op: 'adopt', left: clone(left) });
        c.m.adopt(clone(left));
      }
      // Their steered events are the new chain's to run now, unless the run's model sees them (or a
      // new chain decided their key afresh before the recovery, or holds it: at least once, that runs
      // it). A recovery comes within a round, well within the dedup horizon: one later is not modelled.
      const { pending, running: own, foreign } = c.m.state;
      for (const r of held) {
        const elsewhere = (key: string) =>
          [pending, own, ...(foreign ?? [])].some((b) => b && b.runKey !== r.runKey && b.events.some((e) => e.eventKey === key));
        for (const a of this.accepted.values())
          if (
            a.exempt === TERMINATED &&
            r.steered?.includes(a.key) &&
            r.events.some((e) => e.deliveryIds[0] === a.did) &&
            this.keys.get(a.key)?.accepted === a &&
            this.now - this.keys.get(a.key)!.atMs < this.self.policy.dedupHorizonMs &&
            c.m.lookup(a.key)?.runKey === r.runKey &&
            !elsewhere(a.key)
          ) {
            delete a.exempt;
            a.recovered = true;
          }
      }
      for (const r of held) {
        const run = simOf(r);
        if (isOpen(r) && c.m.holdsRun(r.runKey)) {
          run!.adopted = true;
          this.owedAsks.push({ exec: c.exec, runKey: r.runKey });
        }
      }
      // Then its waiting events, offered again by signal (`offerBySignal`: handlers.ts takes each as an
      // offer, and no caller hears the answer). They keep their delivery ids, so a model's view of one
      // counts for the event as first accepted: it must now be seen by exactly one run (invariant 1).
      // One allowance, as docs/ARCHITECTURE.md states it: between a termination and its recovery a
      // delivery is decided by the new chain alone, and what it decided stays decided. So two chains
      // may each have decided one key, neither knowing the other's decision: a delivery of the key
      // reached a chain other than the event's, after one of the two was terminated (a redelivery in
      // the window; a chain terminated in turn, recovered in the same round). The re-offer then meets
      // that other decision: answered from it (`duplicate`: the key runs there, or was skipped there,
      // and a skip runs only if replayed; `mismatch`: other inputs, and the event's do not run), or
      // steered into a run that holds the key already (it takes it once). A view of the key there
      // counts for the delivery that decided it (its event's first), which is checked on its own: the
      // re-offered event may go unseen, never be seen by two runs. Without such a delivery it must run.
      const at = (did: string) => this.deliveries.findIndex((d) => d.did === did);
      const inWindow = (a: Accepted) =>
        this.deliveries.some((d, i) => {
          if (d.key !== a.key || d.did === a.did || !d.chain || d.chain === a.chain) return false;
          const [aEnd, dEnd] = [this.terminatedAt.get(a.chain), this.terminatedAt.get(d.chain)];
          return (aEnd !== undefined && aEnd <= i) || (dEnd !== undefined && dEnd <= at(a.did));
        });
      for (const o of offers) {
        c.log.push({ op: 'offer', offer: clone(o), now: this.now });
        const answer = c.m.offer(clone(o), this.now);
        const did = o.event.deliveryIds[0]!;
        this.note(
          `recovery offers ${o.event.eventKey} (${did}) again -> ${answer.decision}${answer.duplicate ? ' dup' : ''} ${answer.runKey ? short(answer.runKey) : ''}`,
        );
        const a = this.accepted.get(did);
        if (a?.exempt !== TERMINATED) continue;
        delete a.exempt;
        if (inWindow(a)) a.unseen = DECIDED_ELSEWHERE;
      }
      // Then the end of its live run, if it has closed (a phantom has none), and of its foreign runs.
      for (const r of held) {
        if (isOpen(r) && c.m.holdsRun(r.runKey)) continue;
        // Closed: its end is told again, with the steered events its model never saw, by signal-with-start
        // (a new chain if the one that adopted the table has closed meanwhile).
        const body = endOfHeld(r);
        if (!body) continue;
        if (!this.coal) this.freshCoalescer();
        this.note(`recovery tells ${short(r.runKey)} ended ${body.terminalReason}`);
        this.runEnded(body);
      }
      this.pump();
    }
  }

  /** The loop's first step (report.ts `sendOwed`): ask each adopted live run to report its end; refused, it has closed: a look, not awaited. */
  private sendOwedAsks(c: Coalescer): void {
    for (const ask of this.owedAsks.splice(0)) {
      if (ask.exec !== c.exec) continue;
      const run = this.runs.get(ask.runKey);
      if (run && run.status === 'running' && this.ids.has(ask.runKey)) {
        run.asked = true;
        this.note(`ask ${short(ask.runKey)} to report its end (adopted)`);
      } else {
        this.note(`ask ${short(ask.runKey)} refused: it has closed; a look at it goes out`);
        this.msgs.push({ k: 'look', exec: c.exec, runKey: ask.runKey });
      }
    }
  }

  private exemptBatch(run: SimRun, why: string): void {
    for (const e of run.batch) {
      const a = this.noted(e.deliveryIds[0]!);
      if (a && !a.views.length) a.exempt ??= why;
    }
  }

  private live(): SimRun[] {
    return this.allRuns.filter((r) => r.status === 'running');
  }

  // ---- offers and invariant 2 ----

  offer(list: { key: string; fp: string; did: string; offerId: string; retry?: boolean }[]): void {
    // No coalescer open: the gate starts one with the first offer in its input and answers it from
    // the start alone (src/coalescer/coalescer-start.ts, `decideFirst`); the chain decides it before any message.
    const started = !this.coal;
    const c = this.coal ?? this.freshCoalescer();
    const answers = list.map((d, i) => {
      const offer: Offer = {
        event: {
          eventKey: d.key,
          source: 'sim',
          type: 'ping',
          entity: 'e1',
          occurredAt: new Date(T0).toISOString(),
          bucketStart: new Date(T0).toISOString(),
          deliveryIds: [d.did],
          payload: { key: d.key, fp: d.fp },
          fingerprint: d.fp,
        },
        offerId: d.offerId,
      };
      c.log.push({ op: 'offer', offer: clone(offer), now: this.now });
      const answer = c.m.offer(clone(offer), this.now);
      const delivery = this.deliveries.find((x) => x.did === d.did);
      if (delivery && !d.retry) delivery.chain = c.chain;
      if (started && i === 0) {
        const gate = decideFirst(this.self, clone(offer), c.chain, this.now);
        if (JSON.stringify(gate) !== JSON.stringify(answer))
          this.fail('first', '2', `the gate answered a start ${JSON.stringify(gate)}; the new chain decided ${JSON.stringify(answer)}`);
      }
      return { offer, answer };
    });
    list.forEach((d, i) => {
      const { offer, answer } = answers[i]!;
      if (answer.decision === 'skipped' && c.m.skips.open(d.key)) this.waiting.push({ d, offer, chain: c.chain, atMs: this.now });
      else this.judge(d, answer, c.chain);
    });
    this.pump();
  }

  private judge(d: { key: string; fp: string; did: string; retry?: boolean }, a: OfferAnswer, chain: string, atMs = this.now): void {
    if (a.decision === 'skipped' && !a.duplicate && !this.runs.get(a.runKey ?? '')?.skipped.has(d.key))
      this.fail('skipDead', '1', `${d.key} answered skipped for ${a.runKey}, which never took the record of it (it had closed)`);
    this.note(`offer ${d.key}/${d.fp} (${d.did}${d.retry ? ', retried' : ''}) -> ${a.decision}${a.duplicate ? ' dup' : ''} ${a.runKey ? short(a.runKey) : ''}`);
    const r = this.keys.get(d.key);
    const delivery = this.deliveries.find((x) => x.did === d.did)!;
    if (d.retry) {
      // The same offer again (generated only within the horizon of its key's decision): its first answer.
      const first = delivery.answer!;
      const holders = delivery.accepted ? this.holders(delivery.accepted) : [];
      const same = a.decision === first.decision && a.runKey === first.runKey;
      const followed = a.decision === 'steered' && this.gateFollows(a.runKey, d.key);
      if (!same && !followed && !(a.runKey !== undefined && holders.includes(a.runKey) && ACCEPTING.has(a.decision)))
        this.fail(
          'retry',
          '2',
          `retried offer ${d.did} of ${d.key} answered ${a.decision} ${a.runKey}; first ${first.decision} ${first.runKey}, the runs that took or hold it: ${holders.join(' ') || 'none'}`,
        );
      return;
    }
    delivery.answer = a;
    if (r && !r.void && this.now - r.atMs < this.self.policy.dedupHorizonMs) {
      delivery.accepted = r.accepted;
      delivery.rec = r;
      // A key decided by a new chain between a termination by hand and its recovery is run at least
      // once (docs/ARCHITECTURE.md): a run the recovery adopts that holds it too answers for it.
      if (this.heldByAdopted(a.runKey, d.key)) return;
      const first = `${r.answer.decision} ${r.answer.runKey}`;
      if (d.fp !== r.fp) {
        if (a.decision !== 'mismatch')
          this.fail('mismatch', '2', `${d.key} with other inputs within the horizon answered ${a.decision} (first: ${first}), not mismatch`);
        return;
      }
      if (!a.duplicate) this.fail('afresh', '2', `redelivery of ${d.key} within the horizon decided afresh: ${a.decision} ${a.runKey} (first: ${first})`);
      // The first run, or the one that took it or holds it now (a cancel's restart carries it; a steered
      // event that run did not take is the follow-up's); a steered event's first run only if it took it.
      const holders = r.accepted ? this.holders(r.accepted) : [];
      const took = r.accepted && this.took(r.accepted);
      const allowed = r.answer.decision === 'steered' && took !== undefined && took !== r.answer.runKey ? holders : [r.answer.runKey, ...holders];
      if (!allowed.includes(a.runKey) && !(a.decision === 'steered' && this.gateFollows(a.runKey, d.key)))
        this.fail(
          'redelivery',
          '2',
          `redelivery of ${d.key} answered ${a.decision} ${a.runKey}; first ${first}, the runs that took or hold it: ${holders.join(' ') || 'none'}`,
        );
      if (a.runKey === r.answer.runKey && a.decision !== r.answer.decision)
        this.fail('redelivery', '2', `redelivery of ${d.key} answered ${a.decision}, first ${first}`);
      if (a.runKey !== r.answer.runKey && !ACCEPTING.has(a.decision))
        this.fail('redelivery', '2', `redelivery of ${d.key} answered ${a.decision} ${a.runKey}, first ${first}`);
      return;
    }
    if (a.duplicate || a.decision === 'mismatch') return; // held past the horizon
    const rec: KeyRecord = { fp: d.fp, atMs, answer: a, chain };
    if (ACCEPTING.has(a.decision)) {
      rec.accepted = { did: d.did, key: d.key, chain, answer: a, views: [], ...this.unanswered.get(d.did) };
      this.accepted.set(d.did, rec.accepted);
      delivery.accepted = rec.accepted;
    }
    delivery.rec = rec;
    this.keys.set(d.key, rec);
  }

  /**
   * Whether `runKey` is a run a recovery adopted, holding `key` (in its batch, taken by a steer, or
   * owed it by the chain), or the follow-up batch that took such a run's steered copy of `key`.
   */
  private heldByAdopted(runKey: string | undefined, key: string): boolean {
    if (runKey === undefined) return false;
    const x = this.runs.get(runKey);
    const st = this.coal?.m.state;
    const entries = [st?.pending, st?.running, ...(st?.foreign ?? [])].filter((b) => b?.runKey === runKey).flatMap((b) => b!.events);
    if (x?.adopted && [...x.batch, ...x.taken, ...entries].some((e) => e.eventKey === key)) return true;
    const from = (e: { eventKey: string; steeredFrom?: string }) =>
      e.eventKey === key && e.steeredFrom !== undefined && this.runs.get(e.steeredFrom)?.adopted === true;
    return [...entries, ...(x?.batch ?? [])].some(from);
  }

  /**
   * The gate follows an answer naming a run an event was steered into to the run that took it, when
   * that run completed and its result does not list the event (src/run/await-run.ts `refusedSteer`, and
   * src/coalescer/path.ts); it does not for a run that closed otherwise (terminated: no result).
   * Its result lists its batch and the steered events it took (after the change: those its model saw).
   */
  private gateFollows(runKey: string | undefined, eventKey: string): boolean {
    const run = runKey === undefined ? undefined : this.runs.get(runKey);
    if (!run || run.status !== 'completed' || !this.ids.has(run.runKey)) return false;
    return !absorbedOf(run).includes(eventKey);
  }

  /** The run whose model saw an accepted event, for good (see {@link counts}). */
  private took(a: Accepted): string | undefined {
    return a.views.filter((v) => counts(v)).at(-1)?.run.runKey;
  }

  /**
   * The run that took an accepted event: the one whose model saw it, the pending batch that holds it,
   * any run given it in its batch, a live run holding it steered and not yet given to its model.
   */
  private holders(a: Accepted): string[] {
    const held = (es: Ev[]) => es.some((e) => e.deliveryIds[0] === a.did);
    const pending = this.coal?.m.state.pending;
    return [
      ...[this.took(a)].filter((k): k is string => k !== undefined),
      ...(pending && held(pending.events) ? [pending.runKey] : []),
      ...this.allRuns.filter((r) => held(r.batch) || (r.status === 'running' && held(r.inbox))).map((r) => r.runKey),
    ];
  }

  // ---- commands ----

  exec(cmd: Cmd): void {
    switch (cmd.k) {
      case 'offer':
        this.offer(
          cmd.events.map(({ key, fp }) => {
            const did = `d${++this.dids}`;
            const d = { key: `k${key}`, fp: FPS[fp]!, did };
            this.deliveries.push({ ...d });
            return { ...d, offerId: did };
          }),
        );
        break;
      case 'redeliver': {
        if (!this.deliveries.length) return;
        const old = this.deliveries[cmd.pick % this.deliveries.length]!;
        // A retried offer (same offer id: another update, the fallback signal) comes within the horizon.
        const rec = this.keys.get(old.key);
        if (cmd.retry && rec && rec === old.rec && !rec.void && this.now - rec.atMs < this.self.policy.dedupHorizonMs && old.answer)
          this.offer([{ key: old.key, fp: old.fp, did: old.did, offerId: old.did, retry: true }]);
        else {
          const did = `d${++this.dids}`;
          this.deliveries.push({ key: old.key, fp: old.fp, did });
          this.offer([{ key: old.key, fp: old.fp, did, offerId: did }]);
        }
        break;
      }
      case 'advance':
        this.advanceTo(this.now + cmd.ms);
        break;
      case 'turn':
      case 'commit':
      case 'end':
      case 'terminateRun':
      case 'resetRun': {
        const live = this.live();
        if (!live.length) return;
        const run = live[cmd.run % live.length]!;
        if (cmd.k === 'turn') this.turn(run);
        else if (cmd.k === 'commit') this.commit(run);
        else if (cmd.k === 'end') this.endRun(run, cmd.reason, 'own');
        else if (cmd.k === 'terminateRun') this.terminateRun(run);
        else this.resetRun(run);
        break;
      }
      case 'deliver':
        if (this.msgs.length) this.deliver(cmd.pick % this.msgs.length);
        break;
      case 'watchLive':
        this.watchLive();
        break;
      case 'dropSteer': {
        // The steer activity gives up (its retries run out): after applying the update or before.
        const steers = this.msgs.map((m, i) => [m, i] as const).filter(([m]) => m.k === 'steer');
        if (steers.length) this.deliver(steers[cmd.pick % steers.length]![1], cmd.applied ? 'after' : 'before');
        break;
      }
      case 'terminateCoalescer': {
        const c = this.coal;
        if (!c) return;
        this.note(`coalescer ${c.chain} terminated by hand`);
        // What it held is lost with it, its own events and those it took from a chain recovered before it.
        const { pending, running, foreign } = c.m.state;
        const held = new Set([pending, running, ...(foreign ?? [])].flatMap((b) => (b?.events ?? []).map((e) => e.deliveryIds[0])));
        for (const a of this.accepted.values()) if ((a.chain === c.chain || held.has(a.did)) && !a.views.length) a.exempt ??= TERMINATED;
        for (const r of this.keys.values()) if (r.chain === c.chain) r.void = 'its coalescer was terminated by hand';
        // Its live runs are no chain's until the recovery adopts them and asks them to report their end (report.ts).
        for (const r of this.live()) r.orphan = true;
        this.left.push({ chain: c.chain, state: clone(c.m.state), openSkips: clone(c.m.skips.openSkips()) });
        this.waiting = []; // their updates fail with the coalescer: the gate's signal goes to the next chain
        this.coal = undefined;
        this.byHand = true;
        this.terminatedAt.set(c.chain, this.deliveries.length);
        break;
      }
      case 'recover':
        this.recover(cmd.late);
        break;
      case 'continueAsNew':
        if (this.coal) {
          this.note('continue-as-new suggested');
          this.pump(true);
        }
        break;
      case 'close':
        for (let i = 0; i < 3 && this.coal?.timer !== undefined; i++) this.advanceTo(this.coal.timer);
        break;
      case 'rearm': {
        const closed = this.allRuns.filter((r) => r.status !== 'running' && this.ids.has(r.runKey));
        // The CLI refuses while the coalescer's newest execution closed by hand waits for its recovery
        // (src/cli/run-control.ts): no chain runs to forget the run's events.
        if (!closed.length || (!this.coal && this.byHand)) return;
        // A stated limit, not modelled (docs/OPERATIONS.md, rearm): a run a chain terminated by hand
        // held, re-armed through the next chain before the recovery; its end then reaches no chain.
        const awaited = new Set(this.left.flatMap((l) => [l.state.running, ...(l.state.foreign ?? [])]).map((r) => r?.runKey));
        const run = closed[cmd.run % closed.length]!;
        if (awaited.has(run.runKey)) return;
        // A run's own end signal (when asked) is delivered before it closes (it awaits the signal), and
        // the forget update comes after it in the coalescer's history: the coalescer has taken that end first.
        for (
          let i = this.msgs.findIndex((m) => m.k === 'ended' && m.body.runKey === run.runKey);
          i >= 0;
          i = this.msgs.findIndex((m) => m.k === 'ended' && m.body.runKey === run.runKey)
        )
          this.deliver(i);
        const c = this.coal;
        // Its end may not have reached the coalescer yet (a child result lands a moment after the run
        // closes): the forget looks at the run first, before the CLI deletes it (handlers.ts).
        if (c && this.forgetLooksAt(c, run.runKey)) {
          this.note(`forget of ${short(run.runKey)} waits for its end: it looks now`);
          const end = this.endNow(run.runKey);
          if (end) this.runEnded(end);
        }
        if (c) {
          c.log.push({ op: 'forget', runKey: run.runKey });
          // A row adopted from a chain terminated by hand is compact: it names its event by the key's hash.
          const named = (k: string) => (k.startsWith('#') ? (this.deliveries.find((d) => keyHash(d.key) === k)?.key ?? k) : k);
          const forgotten = c.m.forgetRun(run.runKey).map(named);
          // Only the events the run took (or that were skipped on it) are admitted again; any other decided key stays decided.
          // (A row a recovery adopted may be a skip on it that a later chain's decision, lost with that chain, had replaced.)
          // (The run took the record of a skip a recovery offered again by signal, whose answer no caller heard: `skipped`.)
          const skippedOn = (k: string) =>
            this.deliveries.some((d) => d.key === k && d.answer?.decision === 'skipped' && d.answer.runKey === run.runKey) ||
            this.waiting.some((w) => w.d.key === k) ||
            run.skipped.has(k);
          const stray = forgotten.filter((k) => !absorbedOf(run).includes(k) && !skippedOn(k));
          if (stray.length)
            this.fail('rearm', '2', `rearm of ${short(run.runKey)} forgot ${stray.join(', ')}, which it never took: decided afresh within the horizon`);
          for (const key of forgotten) this.keys.delete(key);
        }
        this.ids.delete(run.runKey);
        this.note(`rearm ${short(run.runKey)}`);
        break;
      }
      case 'crash': {
        const c = this.coal;
        if (!c) return;
        const before = JSON.stringify(c.m.state);
        c.m.next(this.now, false); // decided, never performed: the workflow task fails
        const replayed = this.replay(c);
        if (JSON.stringify(replayed.state) !== before)
          this.fail('replay', 'replay', `the machine rebuilt from its history differs:\n${JSON.stringify(replayed.state)}\n${before}`);
        c.m = replayed;
        this.note('worker crash: replayed');
        this.pump();
        break;
      }
      case 'quiesce':
        this.quiesceAndCheck();
        break;
    }
    this.checkSafety();
  }

  advanceTo(target: number): void {
    for (let i = 0; i < 200; i++) {
      const c = this.coal;
      if (!c || c.timer === undefined || c.timer > target) break;
      this.now = Math.max(this.now, c.timer);
      c.timer = undefined;
      this.pump();
    }
    this.now = Math.max(this.now, target);
    this.pump(); // a wake-up with no due timer only makes the loop look again
  }

  /** The runs whose end a forget waits for (handlers.ts): its live run and its foreign runs. */
  private forgetLooksAt(c: Coalescer, runKey: string): boolean {
    return c.m.state.running?.runKey === runKey || c.m.state.foreign?.some((f) => f.runKey === runKey) === true;
  }

  private checkSafety(): void {
    const live = this.live().filter((r) => !r.orphan);
    if (live.length > 1) this.fail('live2', '4', `${live.length} runs live for one wake key: ${live.map((r) => short(r.runKey)).join(', ')}`);
  }

  /** Every message arrives, every timer fires, every live run ends with success. */
  quiesce(): void {
    for (let round = 0; round < 1000; round++) {
      if (this.left.length) {
        this.recover(false); // the supervisor's round comes
        continue;
      }
      if (this.msgs.length) {
        this.deliver(0);
        continue;
      }
      const live = this.live();
      if (live.length) {
        for (const run of live) {
          this.commit(run);
          this.endRun(run, 'success', 'own');
        }
        continue;
      }
      const c = this.coal;
      if (this.watched().length) {
        const before = JSON.stringify(this.watched());
        this.watchLive(); // its watch timer fires
        if (JSON.stringify(this.watched()) !== before) continue;
      }
      if (!c || c.timer === undefined) break;
      this.advanceTo(c.timer);
    }
    if (this.waiting.length) this.fail('skipWait', '3', `offers answered skipped still wait for their record: ${this.waiting.map((w) => w.d.key).join(', ')}`);
    const c = this.coal;
    if (c) {
      const { pending, running } = c.m.state;
      this.fail(
        'stuck',
        '3',
        `wake key stuck: nothing live or in flight, and the coalescer waits (running ${running?.runKey ?? '-'}, pending ${pending?.runKey ?? '-'})`,
      );
    }
  }

  private checkSeen(): void {
    for (const a of this.accepted.values()) {
      if (a.exempt) continue;
      // Given back by a recovery, its key may pass its horizon before the adopted run's end is known:
      // a delivery decided afresh then, with the same inputs, runs it.
      const sameInputs = () =>
        this.deliveries.some(
          (d) => d.did !== a.did && d.key === a.key && d.fp === this.deliveries.find((x) => x.did === a.did)?.fp && d.accepted?.views.length,
        );
      if (!a.views.length && a.recovered && sameInputs()) continue;
      if (!a.views.length && a.unseen) continue;
      if (!a.views.length)
        this.fail('unseen', '1', `accepted event ${a.key} (${a.did}: ${a.answer.decision} ${a.answer.runKey}) was never seen by a run's model`);
      const runs = new Set(a.views.filter((v) => counts(v)).map((v) => v.run.runKey));
      if (runs.size > 1) this.fail('twice', '1', `accepted event ${a.key} (${a.did}) was seen by ${runs.size} runs: ${[...runs].map(short).join(', ')}`);
    }
  }

  quiesceAndCheck(): void {
    this.note('quiesce');
    this.quiesce();
    this.checkSeen();
    const did = `d${++this.dids}`;
    const key = `fresh${++this.fresh}`;
    this.deliveries.push({ key, fp: 'fpA', did });
    this.offer([{ key, fp: 'fpA', did, offerId: did }]);
    this.quiesce();
    if (!this.accepted.get(did)?.views.length) this.fail('fresh', '3', `a new event ${key} after quiesce was not seen by any run`);
    this.checkSeen();
  }
}

/** The event keys a run's result lists as its own: its batch and the steered events it took (after the change: those its model saw). */
function absorbedOf(run: SimRun): string[] {
  return [...run.batch.map((e) => e.eventKey), ...run.given];
}

/** A model's view counts for invariant 1 unless its work was discarded: cancelled, terminated, or an execution a reset replaced. */
function counts(v: { run: SimRun; exec: number }): boolean {
  return v.exec === v.run.exec && v.run.status !== 'terminated' && v.run.reason !== 'cancelled';
}

const short = (runKey: string) => runKey.slice(runKey.indexOf('@') + 1);

/** Run one command list against a fresh world (a `quiesce` is always last); throws on a violation, with the trace. */
export function play(overlap: Overlap, cmds: Cmd[], tracing = true): World {
  const w = new World(overlap, tracing);
  for (const cmd of [...cmds, { k: 'quiesce' } as const]) w.exec(cmd);
  return w;
}

/** As {@link play}, untraced; a violation is played again with its trace. */
function check(overlap: Overlap, cmds: Cmd[]): void {
  try {
    play(overlap, cmds, false);
  } catch (err) {
    if (err instanceof Violation) play(overlap, cmds);
    throw err;
  }
}

// ---- the generated commands ----

const pick = fc.nat({ max: 7 });
export const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('offer' as const),
      events: fc.array(
        fc.record({
          key: fc.nat({ max: KEYS - 1 }),
          fp: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('redeliver' as const), pick: fc.nat({ max: 30 }), retry: fc.boolean() }) },
  {
    weight: 7,
    arbitrary: fc.record({
      k: fc.constant('advance' as const),
      ms: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 150 }) }, { weight: 1, arbitrary: fc.integer({ min: 300, max: 2500 }) }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('turn' as const), run: pick }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('commit' as const), run: pick }) },
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('end' as const),
      run: pick,
      reason: fc.constantFrom<EndReason>('success', 'no_op', 'budget_exhausted', 'escalated', 'cancelled', 'failed'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('terminateRun' as const), run: pick }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('resetRun' as const), run: pick }) },
  { weight: 6, arbitrary: fc.record({ k: fc.constant('deliver' as const), pick }) },
  { weight: 1, arbitrary: fc.constant({ k: 'watchLive' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('dropSteer' as const), pick, applied: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ k: 'terminateCoalescer' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('recover' as const), late: fc.boolean() }) },
  { weight: 2, arbitrary: fc.constant({ k: 'continueAsNew' as const }) },
  { weight: 1, arbitrary: fc.constant({ k: 'close' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('rearm' as const), run: pick }) },
  { weight: 1, arbitrary: fc.constant({ k: 'crash' as const }) },
  { weight: 1, arbitrary: fc.constant({ k: 'quiesce' as const }) },
);

const OVERLAPS: Overlap[] = ['skip', 'buffer_one', 'cancel', 'steer'];
const ONLY = process.env.COALESCE_MODEL_OVERLAP as Overlap | undefined;
const NUM_RUNS = Number(process.env.COALESCE_MODEL_RUNS ?? 2500);
/** A failing run's seed, as fast-check printed it, to run that very list again. */
const SEED = process.env.COALESCE_MODEL_SEED === undefined ? undefined : Number(process.env.COALESCE_MODEL_SEED);

describe('the coalescer machine in a simulated world (model-based)', () => {
  test('invariant 6 holds over generated command lists, each with its own whileRunning', () => {
    fc.assert(
      fc.property(fc.constantFrom(...(ONLY ? [ONLY] : OVERLAPS)), fc.array(cmdArb, { maxLength: 60, size: 'max' }), (overlap, cmds) => check(overlap, cmds)),
      { numRuns: NUM_RUNS, includeErrorInReport: true, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  });
});

/*
 * The first shrunk counterexamples found on the code as landed (HEAD d986372, where the shell also
 * awaited each steer's answer and watched only the runs it started), kept as regression
 * cases: each replays its command list and must meet no violation. The comment names the defect and
 * what the run of it showed.
 */
describe('the coalescer model: counterexamples found on the landed code (and on the changes)', () => {
  const cases: { name: string; overlap: Overlap; cmds: Cmd[] }[] = [
    {
      // Landed: a run's ID was `agent#wakeKey@<opening event key>`; after the coalescer closed (every
      // event past its horizon), a redelivery of the opener opened a batch under the same ID: the start
      // met the closed run (REJECT_DUPLICATE), the shell swallowed WorkflowExecutionAlreadyStartedError
      // and the machine waited for that run's end forever (invariant 4, then 3).
      name: 'a redelivery after close never reuses the run ID of the run its event opened',
      overlap: 'skip',
      cmds: [{ k: 'offer', events: [{ key: 0, fp: 0 }] }, { k: 'quiesce' }, { k: 'redeliver', pick: 0, retry: false }],
    },
    {
      // Same defect, after a coalescer terminated by hand: its successor opened `@k0` again.
      name: 'a coalescer terminated by hand: its successor never reuses a run ID',
      overlap: 'cancel',
      cmds: [{ k: 'offer', events: [{ key: 0, fp: 0 }] }, { k: 'advance', ms: 100 }, { k: 'terminateCoalescer' }, { k: 'offer', events: [{ key: 0, fp: 0 }] }],
    },
    {
      // Landed: only the execution that started a run watched it (child.result()); a run terminated
      // by hand after a continue-as-new sent nothing, so the coalescer held it as live forever and every
      // later event waited behind it (invariant 3: the key was stuck).
      name: 'a run terminated by hand after a continue-as-new does not hold its wake key',
      overlap: 'buffer_one',
      cmds: [{ k: 'offer', events: [{ key: 0, fp: 0 }] }, { k: 'advance', ms: 100 }, { k: 'continueAsNew' }, { k: 'terminateRun', run: 0 }],
    },
    {
      // Landed (cancel): the restart batch took the live run's events even when that run had begun
      // committing and so was not cancelled: both models saw k0 (invariant 1, seen by two runs).
      name: 'cancel: a run that began committing is not restarted on its own events',
      overlap: 'cancel',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'commit', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
      ],
    },
    {
      // Landed and still in the change (machine.ts runEnded drops the carried events only with
      // `commitBegan`): the run ended no_op (or budget_exhausted, escalated, failed) before the
      // supersede reached it, its runEnded still in flight; the restart re-ran k0, which its model had
      // seen (invariant 1, seen by two runs).
      name: 'cancel: a run that ended before its supersede arrived is not restarted on its events',
      overlap: 'cancel',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 1 }] },
        { k: 'advance', ms: 100 },
        { k: 'end', run: 0, reason: 'no_op' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
      ],
    },
    {
      // Landed (steer): the run took k1 (the update accepted it) and ended escalated before a turn
      // gave it to its model; the coalescer counted it as the run's, so no model ever saw it (invariant 1).
      name: 'steer: an event steered into a run that ends before its model sees it goes to a follow-up run',
      overlap: 'steer',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'close' },
        { k: 'turn', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'deliver', pick: 0 },
        { k: 'end', run: 0, reason: 'escalated' },
      ],
    },
    {
      // Landed: a rearm deleted the closed run `@k0`, so the re-armed event's batch started under the
      // same ID; the old run's result (its starting execution's watch, delivered late) was taken as the
      // new run's end, and the next batch started beside it (invariant 4: two runs live).
      name: 'rearm: a late end of the re-armed run is not taken for its successor’s',
      overlap: 'skip',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 862 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'rearm', run: 0 },
        { k: 'deliver', pick: 0 },
        { k: 'advance', ms: 35 },
        { k: 'advance', ms: 103 },
        { k: 'redeliver', pick: 0, retry: false },
        { k: 'advance', ms: 100 },
        { k: 'deliver', pick: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'advance', ms: 100 },
      ],
    },
    {
      // Landed (cancel): the restart `@k3` carries k0 first; once live, machine.ts heldAnswer took the
      // live run's first event for its opener (a live run has no `openedBy`), so a redelivery of k3
      // was answered `coalesced`, not its first decision `started` (invariant 2).
      name: 'cancel: a redelivery of the event that opened a live restart is answered started',
      overlap: 'cancel',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'offer', events: [{ key: 3, fp: 0 }] },
        { k: 'deliver', pick: 0 },
        { k: 'advance', ms: 100 },
        {
          k: 'offer',
          events: [
            { key: 3, fp: 0 },
            { key: 0, fp: 0 },
          ],
        },
      ],
    },
    {
      // Landed, and still in the change (which keeps the steered-into run in the dedup entry and lets
      // the gate follow a refusal): k0 was steered into k1, which was terminated by hand before taking
      // it; the follow-up run took it and ended; a redelivery is answered with k1, which never took it.
      // The gate follows only a COMPLETED run whose result lacks the event (src/coalescer/path.ts: a
      // run closed otherwise is answered `completed` as "the run that took this event"), so the client
      // is told the wrong run (invariant 2).
      name: 'steer: a redelivery of a steered event names the run that took it',
      overlap: 'steer',
      cmds: [
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'close' },
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'terminateRun', run: 0 },
        { k: 'deliver', pick: 0 },
        { k: 'advance', ms: 100 },
        { k: 'deliver', pick: 0 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'deliver', pick: 0 },
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
      ],
    },
    {
      // Found on the change (7f52d54), after the rearm check was added; fails on the landed code too.
      // Same root as the case above: the dedup entry of an event steered into a run that never took it
      // (k1, steered into k0 after k0 had ended, so the follow-up batch holds it) still names that run,
      // so `forgetRun` of k0 (wakegate rearm) forgets k1 too: decided afresh within the horizon, its
      // next delivery after the follow-up run runs it again (machine.ts forgetRun, seen.keysOfRun).
      name: 'steer: rearming a run forgets only the events it took',
      overlap: 'steer',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 1 }] },
        { k: 'advance', ms: 300 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'deliver', pick: 0 },
        { k: 'rearm', run: 0 },
      ],
    },
    {
      // Found by CI's run of the model once runs reported their end by child result: a run ended
      // having seen a steered event (k1), and a person re-armed it before its child result reached the
      // coalescer. The forget found it still live and forgot nothing, the run was deleted, and the watch
      // read it as failed, seen nothing: k1 went to a follow-up run and was seen twice. A forget of the
      // live run now has the watch look first, while the run is still there (handlers.ts).
      name: 'steer: a run re-armed before its end reached its coalescer keeps what its model saw',
      overlap: 'steer',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        {
          k: 'offer',
          events: [
            { key: 1, fp: 1 },
            { key: 0, fp: 0 },
          ],
        },
        { k: 'deliver', pick: 0 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'rearm', run: 0 },
        { k: 'watchLive' },
      ],
    },
    {
      // Found by the model once it checked skips (and by CI's short soak, campaign-reporter#camp-5): a
      // run terminated by hand sends its coalescer no end, and the next event was answered `skipped`
      // for it, though no run would ever take it. A skip now stands only once its run took the record
      // of it; a closed run refuses that signal and the event goes to the next batch (skips.ts).
      name: 'skip: an event is never answered skipped for a run that had closed',
      overlap: 'skip',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'terminateRun', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
      ],
    },
    {
      // Found by a long run of the model (about one list in 10,000): a defect of the model, not of the
      // machine. k2 was skipped on k0, whose end the coalescer had not taken yet; a rearm of k0 forgot
      // k2's row, and a redelivery of k2 was skipped afresh on k1. k0 refused the record: k2 opened a
      // batch, as designed (docs/ARCHITECTURE.md: a skip stands only once its run took the record),
      // which started and whose model saw k2 while the first offer's answer still waited for k1's
      // record (the update waits for every open skip of its key). The model counted a view only for an
      // offer already answered, and so took k2 for never seen (invariant 1).
      name: 'skip: a refused skip’s batch may run before its offer is answered',
      overlap: 'skip',
      cmds: [
        {
          k: 'offer',
          events: [
            { key: 0, fp: 1 },
            { key: 0, fp: 0 },
          ],
        },
        { k: 'redeliver', pick: 0, retry: false },
        { k: 'advance', ms: 300 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'redeliver', pick: 0, retry: false },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        {
          k: 'offer',
          events: [
            { key: 0, fp: 0 },
            { key: 2, fp: 1 },
            { key: 0, fp: 0 },
          ],
        },
        { k: 'advance', ms: 100 },
        { k: 'rearm', run: 0 },
        { k: 'redeliver', pick: 30, retry: false },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'rearm', run: 0 },
      ],
    },
    {
      // Found with COALESCE_MODEL_RUNS=10000 (seed -968044478): after a terminate by hand, a redelivery
      // of k0 ran in this chain's own run; the recovery then adopted the terminated chain's live run,
      // which still listed k0, and the next event's restart took k0 from it and ran it again
      // (invariant 2). An adopted run keeps only the events this chain did not decide itself.
      name: 'cancel: an event this chain ran before the recovery is not restarted from the adopted run',
      overlap: 'cancel',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 300 },
        { k: 'terminateCoalescer' },
        { k: 'redeliver', pick: 0, retry: false },
        { k: 'close' },
        { k: 'end', run: 3, reason: 'success' },
        { k: 'watchLive' },
        { k: 'recover', late: false },
        {
          k: 'offer',
          events: [
            { key: 1, fp: 0 },
            { key: 0, fp: 0 },
          ],
        },
      ],
    },
    {
      // Found once the model's recovery offered the waiting events again: a pending event (answered
      // `started`) of a chain terminated by hand, offered again while the next chain's run was live,
      // was skipped on that run, and no model ever saw it (invariant 1). The recovery now offers such
      // events as accepted (`Offer.accepted`), and the machine never skips one: it waits for the next batch.
      name: 'skip: an event a terminated chain had accepted is not skipped when the recovery offers it again',
      overlap: 'skip',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'terminateCoalescer' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'recover', late: false },
      ],
    },
    {
      // Found the same way: the run k0 ended, having run k0, and k1's restart batch (which carried k0)
      // was the terminated chain's pending batch. The recovery offered k0 again as that run's restart,
      // but the run had closed, so the next chain did not hold it and decided k0 as new; the run's end,
      // told after, could not take k0 back out (invariant 1, seen by two runs). A run closed before the
      // recovery whose end says it ran its events has its restart events left out of the offers.
      name: 'cancel: a recovery does not offer again the restart events a closed run had run',
      overlap: 'cancel',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'terminateCoalescer' },
      ],
    },
  ];
  for (const c of cases) test(`${c.name} (${c.overlap})`, () => check(c.overlap, c.cmds));
});

/*
 * A coalescer terminated by hand while its live run F held a steered event, and a new event started a
 * new chain and its run G before the recovery: the recovery's adoption finds G live, so F is held as
 * a foreign run (workflows/coalescer/by-hand.ts), asked to report its end. Its end decides its
 * steered events: those its model never saw run in a follow-up batch, those it saw never again.
 */
describe('the coalescer model: a foreign run adopted from a chain terminated by hand', () => {
  /** F (run 0) takes k1 by a steer; chain c1 is terminated; k2 starts chain c2 and its run G. */
  const foreignHolds = (seen: boolean): Cmd[] => [
    { k: 'offer', events: [{ key: 0, fp: 0 }] },
    { k: 'advance', ms: 100 },
    { k: 'offer', events: [{ key: 1, fp: 0 }] },
    { k: 'deliver', pick: 0 },
    ...(seen ? [{ k: 'turn', run: 0 } as const] : []),
    { k: 'terminateCoalescer' },
    { k: 'offer', events: [{ key: 2, fp: 0 }] },
    { k: 'advance', ms: 100 },
  ];
  const cases: { name: string; cmds: Cmd[] }[] = [
    {
      // On the code before: the chain holding F as foreign was terminated by hand in turn; its recovery
      // passed on its table and its own live run, not F. F, terminated by hand too, sent no end, no
      // chain looked at it, and k1, which F's model never saw, never ran.
      name: 'the chain holding a foreign run is terminated too: the next chain holds it, its unseen steered event runs',
      cmds: [...foreignHolds(false), { k: 'recover', late: false }, { k: 'terminateCoalescer' }, { k: 'recover', late: false }, { k: 'terminateRun', run: 0 }],
    },
    {
      // The same, with F ended before the second recovery: its end is told again to the next chain.
      name: 'the chain holding a foreign run is terminated too, and the run ends meanwhile: its unseen steered event runs',
      cmds: [...foreignHolds(false), { k: 'recover', late: false }, { k: 'terminateCoalescer' }, { k: 'terminateRun', run: 0 }, { k: 'recover', late: false }],
    },
    {
      // On the code before: asked to report its end, F was terminated by hand and sent nothing; the watch
      // looked only at the live run, so F's end was never taken and k1 never ran.
      name: 'a foreign run terminated by hand after its ask: the watch finds it, its unseen steered event runs',
      cmds: [...foreignHolds(false), { k: 'recover', late: false }, { k: 'terminateRun', run: 0 }],
    },
    {
      name: 'a foreign run that ends unseen, unasked (its ask refused): the look finds it, its unseen steered event runs',
      cmds: [...foreignHolds(false), { k: 'end', run: 0, reason: 'budget_exhausted' }, { k: 'recover', late: true }],
    },
    {
      // On the code before: F closed before the new chain's ask, and a person re-armed F before the look
      // that refusal started: the forget forgot F's rows at once, the look then found F deleted, and k1,
      // which F's model saw, ran again in a follow-up run. The forget now waits for a foreign run's end.
      name: 'a foreign run re-armed before its end was taken keeps what its model saw',
      cmds: [...foreignHolds(true), { k: 'end', run: 0, reason: 'success' }, { k: 'recover', late: true }, { k: 'rearm', run: 0 }],
    },
    {
      // Found by this model once it recovered terminated chains: the chain that held F as foreign,
      // idle otherwise, closed before F's end (asked for) reached it; the end reached no chain and k1,
      // which F's model never saw, never ran. A chain holding a foreign run is not idle.
      name: 'a chain holding a foreign run does not close before its end: its unseen steered event runs',
      cmds: [
        ...foreignHolds(false),
        { k: 'recover', late: false },
        { k: 'end', run: 0, reason: 'failed' },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'deliver', pick: 2 },
        { k: 'close' },
      ],
    },
    {
      // Found by this model once it recovered terminated chains: the recovery told F's end, with k1
      // unseen, after k1's row in the new chain had passed its horizon while that chain's live run
      // (a redelivery decided afresh) still held it. The follow-up left k1 with that run, opened no
      // batch, and the machine read the batch it had not opened (a workflow task failing for good).
      name: 'a closed run’s end told by the recovery names an event the live run holds: it stays there',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'close' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'terminateCoalescer' },
        { k: 'redeliver', pick: 9, retry: false },
        { k: 'advance', ms: 810 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'advance', ms: 83 },
        { k: 'advance', ms: 107 },
      ],
    },
  ];
  for (const c of cases) test(`${c.name} (steer)`, () => check('steer', c.cmds));
});

/*
 * A run reports its end by signal only when asked (workflows/coalescer/report.ts): the coalescer
 * execution that started it learns it from the child's result, and one about to continue as new with
 * it live asks it first. These cases play the hand-over while the run is live and while it is ending
 * (its end in flight: the ask is refused, the child's result taken before going on), for each overlap.
 */
describe('the coalescer model: a continue-as-new while its run is live, or ending', () => {
  const cases: { name: string; cmds: Cmd[] }[] = [
    {
      name: 'continued as new while its run is live: the run, asked, reports its end to the next execution',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'continueAsNew' },
        { k: 'turn', run: 0 },
        { k: 'end', run: 0, reason: 'success' },
        { k: 'deliver', pick: 0 },
      ],
    },
    {
      name: 'continued as new twice while its run is live: asked once, its end reaches the newest execution',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'continueAsNew' },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'continueAsNew' },
        { k: 'end', run: 0, reason: 'no_op' },
      ],
    },
    {
      name: 'continued as new while its run is ending: the ask is refused, the child result taken first',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'turn', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'end', run: 0, reason: 'escalated' },
        { k: 'continueAsNew' },
        { k: 'deliver', pick: 0 },
      ],
    },
    {
      name: 'continued as new while its run is ending with a steered event its model never saw',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'close' },
        { k: 'turn', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
        { k: 'deliver', pick: 0 },
        { k: 'end', run: 0, reason: 'budget_exhausted' },
        { k: 'continueAsNew' },
      ],
    },
    {
      name: 'continued as new, then its run terminated by hand: the watch finds it',
      cmds: [
        { k: 'offer', events: [{ key: 0, fp: 0 }] },
        { k: 'advance', ms: 100 },
        { k: 'continueAsNew' },
        { k: 'terminateRun', run: 0 },
        { k: 'offer', events: [{ key: 1, fp: 0 }] },
      ],
    },
  ];
  for (const c of cases) for (const overlap of OVERLAPS) test(`${c.name} (${overlap})`, () => check(overlap, c.cmds));
});
