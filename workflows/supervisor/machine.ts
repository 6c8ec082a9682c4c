import type { LeaseAnswer } from '../../src/core/permit-types';
import type { ReleaseRecord, SupervisorInput, SupervisorStatus } from '../../src/core/supervisor-types';
import { forgetExpired, returnUnused } from './blocks';
import { lease } from './caps';
import { nextObserveMs, observeIfDue, observed, pruneSeries, visibilityAnswered } from './observe';
import { continuing, dueNow, nextDueMs, paged, stopped } from './pages';
import { halt, release, reset } from './people';
import type { Action, Input, MachineState, Turn } from './state';
import { statusOf } from './status';
import { countWakes } from './trips';

export { refusal } from './people';
export { memoOf, statusOf } from './status';
export type { Action, Input, MachineState, VisibilityFailure } from './state';

/**
 * The supervisor as a pure machine: `transition(state, input, nowMs) → { state, actions, reply }`. The
 * workflow (./workflow.ts) feeds it every message and every outcome of the actions it asked for,
 * and performs those actions; the rules live here, deterministic and testable without a server.
 *
 * It holds the breaker and the fleet's rolling budgets:
 * - the gate reports the wakes it admitted that start a run (`wakes`): a storm over `storm.*PerMinute` trips the breaker;
 * - every run's first step takes a permit, from its worker process's local stock, which the process
 *   leases in blocks (`lease`, counted in the windows at once) and hands back unused (`unused`): a
 *   full cap (wakes, USD or tokens in a sliding window, fleet or agent) holds the run until the
 *   window slides, and pages once per episode (at most once per the cap's window);
 * - it watches the runs that closed, one activity per burst reading every `observeEveryMs` (`observe`,
 *   then `observed`): an error rate over the threshold trips the breaker, and their spend counts
 *   against the caps.
 * A trip is sticky: it pages once, stops the live runs of agents whose policy says `cancel`, and
 * holds every wake until a person resets it (`reset`, recorded) and releases or discards the held
 * wakes (`release`). `halt` and `drain` are a person's trips.
 */

/** What each input is answered with (an update's result); the rest get none. */
interface Replies {
  lease: LeaseAnswer;
  reset: SupervisorStatus;
  halt: SupervisorStatus;
  release: ReleaseRecord;
}
export type ReplyOf<I extends Input> = I['kind'] extends keyof Replies ? Replies[I['kind']] : undefined;

export interface Transition<I extends Input = Input> {
  state: MachineState;
  actions: Action[];
  reply: ReplyOf<I>;
}

/**
 * The machine at the start of a workflow run: the state it continued with, or a new supervisor's.
 * A new one begins by reading the runs that closed in the last error-rate window: its first round is
 * at once, and it finds out at once whether this server has a visibility API at all; then, with no
 * wake, lease or closed run, it is idle. A run continued as new keeps the last activity it knew: an
 * idle fleet's supervisor stays idle across its runs.
 */
export function start(input: SupervisorInput, nowMs: number): MachineState {
  const { taskQueue, policy } = input;
  const state = input.state ?? {
    mode: 'armed',
    trips: [],
    resets: [],
    releases: [],
    nextTripId: 1,
    nextReleaseId: 1,
    series: {},
    capHolds: {},
    nextCapEpisode: 1,
    observedToMs: nowMs - policy.errorRate.windowMs,
  };
  // A new supervisor watches once at its start (it has read nothing yet); a run continued as new from
  // a state that kept no activity counts from its start.
  const lastActivityMs = state.lastActivityMs ?? (input.state ? nowMs : 0);
  return { ...clone(state), taskQueue, policy, lastActivityMs, lastObserveAttemptMs: 0, observing: false };
}

/** What continues as new: the policy and the state, without what a new run starts afresh. */
export function continueWith(m: MachineState): Required<SupervisorInput> {
  const { taskQueue, policy, lastObserveAttemptMs: _observe, observing: _watching, ...state } = clone(m);
  return { taskQueue, policy, state };
}

/** One step: the state after `input` at `nowMs`, the actions it asks for, and its reply. `m` itself is left as it was. */
export function transition<I extends Input>(m: MachineState, input: I, nowMs: number): Transition<I> {
  const turn: Turn = { m: clone(m), nowMs, actions: [] };
  const reply = apply(turn, input);
  return { state: turn.m, actions: turn.actions, reply: reply as ReplyOf<I> };
}

function apply(turn: Turn, input: Input): Replies[keyof Replies] | undefined {
  const { m, nowMs } = turn;
  switch (input.kind) {
    case 'wakes':
      countWakes(turn, input.counts, input.lastAtMs);
      break;
    case 'lease':
      return lease(turn, input);
    case 'unused':
      returnUnused(turn, input);
      break;
    case 'reset':
      reset(turn, input);
      return statusOf(m, nowMs);
    case 'halt':
      halt(turn, input);
      return statusOf(m, nowMs);
    case 'release':
      return release(turn, input);
    case 'configure':
      m.policy = input.policy;
      break;
    case 'tick':
      dueNow(turn);
      observeIfDue(turn);
      pruneSeries(m, nowMs);
      forgetExpired(m, nowMs);
      break;
    case 'paged':
      paged(turn, input.page, input.outcome);
      break;
    case 'stopped':
      stopped(turn, input.stop, input.failed);
      break;
    case 'nudged':
      visibilityAnswered(turn, 'nudge held runs', input.failed);
      break;
    case 'observed':
      observed(turn, input.read, input.failed);
      break;
    case 'continuing':
      continuing(turn, input.inFlight);
      break;
  }
  return undefined;
}

/**
 * When the workflow must next come round of itself (epoch ms): the next stop or page due and the next
 * watch of closed runs (`nextObserveMs`: none while one is in flight, at once when runs may have
 * started since the last, five minutes after the last when idle). Undefined with nothing due (a
 * watch in flight, or a server without visibility): wait for a message or the watch's answer.
 */
export function nextWakeMs(m: MachineState, _nowMs?: number): number | undefined {
  const due = nextDueMs(m);
  const observe = nextObserveMs(m);
  if (observe === undefined) return due;
  return Math.min(observe, due ?? Infinity);
}

/** The state is plain JSON: a copy is a JSON round trip. */
function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
