import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { SupervisorActivities } from '../../src/core/contracts';
import {
  configureUpdate,
  haltUpdate,
  leaseUpdate,
  releaseUpdate,
  resetUpdate,
  supervisorStatusQuery,
  unusedPermitsSignal,
  wakesSignal,
} from '../../src/core/supervisor-messages';
import { ENTITY_HISTORY_EVENTS } from '../../src/core/history';
import type { PageAction, SupervisorInput, SupervisorStatus } from '../../src/core/supervisor-types';
import {
  continueWith,
  memoOf,
  nextWakeMs,
  refusal,
  start,
  statusOf,
  transition,
  type Action,
  type Input,
  type ReplyOf,
  type VisibilityFailure,
} from './machine';
import { workflowNow } from '../shared/clock';
import { WATCH_MAX_MS } from './state';
import { sendPage } from '../shared/pager';
import { timerAt, untilWokeOr } from '../shared/timer';

const { stopLiveRuns, nudgeHeld } = proxyActivities<SupervisorActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});
/**
 * A watch of closed runs reads for up to WATCH_MAX_MS in one activity; no heartbeat (each would be a
 * billable action): a worker lost mid-watch is found by this timeout and the watch tried again.
 */
const { observeRuns } = proxyActivities<SupervisorActivities>({
  startToCloseTimeout: WATCH_MAX_MS + 60_000,
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});

/**
 * Temporal keeps at most 2,000 updates in one run's history (and refuses more); the run continues
 * as new well before, whether or not the server suggests it (servers suggest it on history size).
 */
const MAX_UPDATES_PER_RUN = 1_500;

/** A failed activity in its cause's own words (the pager's refusal, a timeout), not the wrapper's "Activity task failed". */
const causeOf = (err: unknown): Error => (err instanceof ActivityFailure && err.cause ? err.cause : (err as Error));
const visibilityFailure = (err: unknown): VisibilityFailure => {
  const cause = causeOf(err);
  return { message: cause.message, unavailable: cause instanceof ApplicationFailure && cause.type === 'VisibilityUnavailable' };
};

/** What the shell performs of the machine's actions (it logs the rest). */
type Performed = Exclude<Action, { kind: 'log' }>;
/** An input fed to the machine: its state moves on, its actions are queued, its reply returned. */
type Feed = <I extends Input>(i: I) => ReplyOf<I>;

/**
 * The supervisor (ID `wakegate-supervisor/<task queue>`), the workflow the agents do not control: it
 * holds the breaker and the fleet's rolling budgets and is never on an event's path. Its rules are
 * the pure machine in ./machine.ts; this shell feeds it the gate's wake counts, the processes'
 * leases and returned permits and a person's reset, halt and release, performs what it asks for
 * (pages, stops of live runs, nudges of held runs, reads of closed runs) through activities and
 * feeds it back how each went, publishes its memo for every process to read, and continues as new
 * when Temporal suggests it (its loop wakes for that) or after MAX_UPDATES_PER_RUN updates.
 */
export async function supervisorWorkflow(input: SupervisorInput): Promise<void> {
  const { taskQueue } = input;
  let m = start(input, workflowNow());
  const queue: Performed[] = [];
  const feed = <I extends Input>(i: I): ReplyOf<I> => {
    const out = transition(m, i, workflowNow());
    m = out.state;
    for (const a of out.actions) {
      if (a.kind === 'log') log[a.level](a.message, a.attrs);
      else queue.push(a);
    }
    return out.reply;
  };
  const refuse = (i: Input) => {
    const why = refusal(m, i);
    if (why) throw new Error(why);
  };

  // Updates taken in this run (refused ones never reach the history): counted against Temporal's per-run limit.
  let updates = 0;
  const counted = <T>(reply: T): T => {
    updates += 1;
    return reply;
  };
  listen(feed, refuse, counted, () => statusOf(m, workflowNow(), { charts: true }));
  const timeToContinue = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= ENTITY_HISTORY_EVENTS || updates >= MAX_UPDATES_PER_RUN;
  };

  let memoJson = '';
  const memoChanged = () => JSON.stringify(memoOf(m)) !== memoJson;
  /** The memo is what every process reads (cached): published before any action, so the gate holds at once. */
  const publish = () => {
    const memo = memoOf(m);
    const json = JSON.stringify(memo);
    if (json !== memoJson) {
      memoJson = json;
      upsertMemo({ supervisor: memo });
    }
  };

  const perform = (a: Performed) => performAction(a, taskQueue, feed);
  const due = timerAt();
  /** Pages being sent beside the rest of the work, for the next run to send again if this one continues as new first. */
  const inFlight = new Map<Promise<void>, PageAction>();

  for (;;) {
    publish();
    if (!queue.length) {
      // Until the next due stop or page, or the next watch of closed runs (none while one is in
      // flight: its answer wakes the loop); or sooner, when a message or a watch's answer asks for an
      // action, changes the memo or brings something due sooner.
      const wakeAtMs = nextWakeMs(m, workflowNow()) ?? Infinity;
      const woke = () => queue.length > 0 || memoChanged() || (nextWakeMs(m, workflowNow()) ?? Infinity) < wakeAtMs || timeToContinue();
      if (wakeAtMs === Infinity) await condition(woke);
      else await untilWokeOr(woke, due(wakeAtMs));
    }
    feed({ kind: 'tick' });
    while (queue.length) {
      publish();
      const a = queue.shift()!;
      // A page retries for minutes when the pager is slow or down, and a watch of closed runs reads
      // for the length of a burst: each goes on beside the rest, so stopping live runs (the kill
      // switch), nudges and pages never wait behind them. The machine asks for one watch at a time.
      if (a.kind === 'page') {
        const { kind: _kind, ...page } = a;
        const paging: Promise<void> = perform(a).finally(() => inFlight.delete(paging));
        inFlight.set(paging, page);
      } else if (a.kind === 'observe') void perform(a);
      else await perform(a);
    }
    if (timeToContinue()) {
      // A page in flight may retry for many minutes; waiting for it here would leave a halt that
      // comes meanwhile unpublished and its stop undone: the next run sends it again.
      publish();
      await condition(allHandlersFinished);
      if (queue.length) continue; // a person's action came in: act on it first
      feed({ kind: 'continuing', inFlight: [...inFlight.values()] });
      // The memo goes with it: a next run with none until its first task would read as armed, and a
      // gate or a held run reading it in that moment would pass a halt.
      return makeContinueAsNewFunc<typeof supervisorWorkflow>({ memo: { supervisor: memoOf(m) } })(continueWith(m));
    }
  }
}

/**
 * The supervisor's messages, each fed to the machine: the gate's wake counts and returned permits
 * (signals); leases and a person's reset, halt, release and configure (updates, each `counted`
 * against the run's limit, refused by their validator as the machine would refuse them); status.
 */
function listen(feed: Feed, refuse: (i: Input) => void, counted: <T>(reply: T) => T, status: () => SupervisorStatus): void {
  setHandler(wakesSignal, ({ counts, lastAtMs }) => {
    feed({ kind: 'wakes', counts, ...(typeof lastAtMs === 'number' ? { lastAtMs } : {}) });
  });
  setHandler(unusedPermitsSignal, (u) => {
    feed({ ...u, kind: 'unused' });
  });
  setHandler(leaseUpdate, (r) => counted(feed({ ...r, kind: 'lease' })), { validator: (r) => refuse({ ...r, kind: 'lease' }) });
  setHandler(resetUpdate, (p) => counted(feed({ ...p, kind: 'reset' })), { validator: (p) => refuse({ ...p, kind: 'reset' }) });
  setHandler(haltUpdate, (h) => counted(feed({ ...h, kind: 'halt' })), { validator: (h) => refuse({ ...h, kind: 'halt' }) });
  setHandler(releaseUpdate, (r) => counted(feed({ ...r, kind: 'release' })), { validator: (r) => refuse({ ...r, kind: 'release' }) });
  setHandler(configureUpdate, (policy) => {
    counted(feed({ kind: 'configure', policy }));
  });
  setHandler(supervisorStatusQuery, status);
}

/** Perform one action through its activity, and feed the machine how it went. */
async function performAction(a: Performed, taskQueue: string, feed: Feed): Promise<void> {
  if (a.kind === 'page') {
    const { kind: _kind, ...page } = a;
    const outcome = await sendPage(page.page).then(
      (r) => ({ dedupKey: r.dedupKey, status: r.status }),
      (err: unknown) => ({ error: causeOf(err).message }),
    );
    feed({ kind: 'paged', page, outcome });
  } else if (a.kind === 'stop') {
    const { kind: _kind, ...stop } = a;
    const failed = await stopLiveRuns({ taskQueue, ...(stop.agents ? { agents: stop.agents } : {}), who: stop.who, reason: stop.reason }).then(
      () => undefined,
      visibilityFailure,
    );
    feed({ kind: 'stopped', stop, ...(failed ? { failed } : {}) });
  } else if (a.kind === 'nudge') {
    const failed = await nudgeHeld({ taskQueue, ...(a.agent ? { agent: a.agent } : {}) }).then(() => undefined, visibilityFailure);
    feed({ kind: 'nudged', ...(failed ? { failed } : {}) });
  } else {
    const { fromMs, limit, watch } = a;
    const answer = await observeRuns({ taskQueue, fromMs, limit, watch }).then(
      (read) => ({ read }),
      (err: unknown) => ({ failed: visibilityFailure(err) }),
    );
    feed({ kind: 'observed', ...answer });
  }
}
