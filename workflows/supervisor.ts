import { ActivityFailure, ApplicationFailure, allHandlersFinished, condition, log, makeContinueAsNewFunc, patched, proxyActivities, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { SupervisorActivities } from '../core/contracts';
import { supervisorId } from '../core/ids';
import { addTo, newSeries, nextSlideMs, prune, sumOf } from './sliding-window';
import { configureUpdate, haltUpdate, leaseUpdate, releaseUpdate, resetUpdate, supervisorStatusQuery, wakesSignal } from '../core/supervisor-messages';
import type {
  CounterView,
  PageAction,
  SeriesState,
  SupervisorInput,
  SupervisorMemo,
  SupervisorPolicy,
  SupervisorState,
  SupervisorStatus,
  StopRequest,
  Trip,
  TripKind,
  WindowCap,
} from '../core/supervisor-types';

/** Workflow time (replayed from history): the windows slide in it. */
// eslint-disable-next-line no-restricted-syntax
const now = (): number => Date.now();
const iso = (ms: number) => new Date(ms).toISOString();

const KEPT = 20;
/** Runs read per observation; more are read on the next round. */
const OBSERVE_LIMIT = 2000;
/** Runs closed in the last few seconds may not be in visibility yet: read up to this far behind. */
const SETTLE_MS = 1000;
/** A stop of live runs is swept once more this long after it, for runs visibility had not listed yet. */
const STOP_SWEEP_MS = 3000;
/** A failed stop is tried again after a backoff doubling up to this. */
const MAX_STOP_RETRY_MS = 60_000;
/** A failed page is sent again after `policy.pageResendMs` (default this), doubling up to an hour. */
const PAGE_RESEND_MS = 5 * 60_000;
const MAX_PAGE_RESEND_MS = 60 * 60_000;

const { observeRuns, stopLiveRuns, nudgeHeld } = proxyActivities<SupervisorActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});
/** A page is retried for about ten minutes; its dedup key makes the retries one incident. */
const { sendPage } = proxyActivities<SupervisorActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 20, initialInterval: '2 seconds', maximumInterval: '1 minute' },
});

type Action =
  | ({ kind: 'page' } & PageAction)
  | ({ kind: 'stop' } & StopRequest)
  | { kind: 'nudge'; agent?: string };

const FLEET = '*';
const capName = (c: WindowCap) =>
  [c.wakes !== undefined && `${c.wakes} wakes`, c.costUsd !== undefined && `$${c.costUsd}`, c.tokens !== undefined && `${c.tokens} tokens`].filter(Boolean).join(', ') +
  ` per ${c.windowMs / 1000} s`;

/**
 * The supervisor: a small, dumb workflow (ID `wakegate-supervisor/<task queue>`) that the agents do
 * not control. It holds the breaker and the fleet's rolling budgets; it is never on an event's path:
 * - the gate reads its memo (mode, caps full, releases) through a per-process cache and reports the
 *   wakes it admitted in batches (`wakes` signal): a storm over `storm.*PerMinute` trips the breaker;
 * - every run's first step takes a permit, leased in batches per worker process (`lease` update):
 *   a full cap (wakes, USD or tokens in a sliding window, fleet or agent) holds the run until the
 *   window slides, and pages once per episode (at most once per the cap's window);
 * - it reads the runs that closed (visibility: terminal reason, tokens, cost) every `observeEveryMs`:
 *   an error rate over the threshold trips the breaker, and their spend counts against the caps.
 * A trip is sticky: it pages once, stops the live runs of agents whose policy says `cancel`, and
 * holds every wake until a person resets it (`reset`, recorded) and releases or discards the held
 * wakes (`release`). `halt` and `drain` are a person's trips. Continues as new when Temporal suggests it.
 */
export async function supervisorWorkflow(input: SupervisorInput): Promise<void> {
  const { taskQueue } = input;
  const selfId = supervisorId(taskQueue);
  let policy: SupervisorPolicy = input.policy;
  const state: SupervisorState = input.state ?? {
    mode: 'armed',
    trips: [],
    resets: [],
    releases: [],
    nextTripId: 1,
    nextReleaseId: 1,
    series: {},
    capHolds: {},
    nextCapEpisode: 1,
    // A new supervisor (first start, or after its history was lost) begins by reading the runs that
    // closed in the last error-rate window: its first round is at once, and it finds out at once
    // whether this server has a visibility API at all.
    observedToMs: now() - policy.errorRate.windowMs,
  };
  const actions: Action[] = [];
  let lastActivityMs = now();
  /** When closed runs were last asked for (a failed read waits a round before the next). */
  let lastObserveAttemptMs = 0;
  let memoJson = '';

  const series = (name: string, windowMs: number): SeriesState => {
    const s = state.series[name];
    if (s && s.windowMs === windowMs) return s;
    return (state.series[name] = newSeries(windowMs));
  };
  const capsOf = (agent: string): { scope: string; cap: WindowCap }[] => [
    ...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })),
    ...(policy.caps.agents[agent] ?? []).map((cap) => ({ scope: agent, cap })),
  ];
  const capSeries = (scope: string, cap: WindowCap, what: 'permits' | 'usd' | 'tokens') => series(`${what}:${scope}:${cap.windowMs}`, cap.windowMs);

  /** Read-only (queries call it): a series that does not exist counts 0. */
  const peek = (name: string) => state.series[name];
  const counters = (): CounterView[] => {
    const t = now();
    const out: CounterView[] = [];
    out.push({ name: 'wakes per minute', scope: FLEET, windowMs: 60_000, value: sumOf(peek(`storm:${FLEET}`), t), limit: policy.storm.fleetPerMinute, rationale: policy.storm.rationale });
    if (policy.storm.agentPerMinute !== undefined) {
      for (const name of Object.keys(state.series).filter((n) => n.startsWith('storm:') && n !== `storm:${FLEET}`)) {
        out.push({ name: 'wakes per minute', scope: name.slice(6), windowMs: 60_000, value: sumOf(peek(name), t), limit: policy.storm.agentPerMinute, rationale: policy.storm.rationale });
      }
    }
    const caps = [...policy.caps.fleet.map((cap) => ({ scope: FLEET, cap })), ...Object.entries(policy.caps.agents).flatMap(([scope, cs]) => cs.map((cap) => ({ scope, cap })))];
    for (const { scope, cap } of caps) {
      const base = { scope, windowMs: cap.windowMs, rationale: cap.rationale };
      const v = (what: string) => sumOf(peek(`${what}:${scope}:${cap.windowMs}`), t);
      if (cap.wakes !== undefined) out.push({ ...base, name: 'runs started', value: v('permits'), limit: cap.wakes });
      if (cap.costUsd !== undefined) out.push({ ...base, name: 'spend USD', value: Math.round(v('usd') * 1e6) / 1e6, limit: cap.costUsd });
      if (cap.tokens !== undefined) out.push({ ...base, name: 'tokens', value: v('tokens'), limit: cap.tokens });
    }
    const er = policy.errorRate;
    const runs = sumOf(peek(`runs:${FLEET}`), t);
    const errors = sumOf(peek(`errors:${FLEET}`), t);
    out.push({ name: `error rate (runs ended ${er.reasons.join('/')}, of ${runs})`, scope: FLEET, windowMs: er.windowMs, value: runs ? Math.round((errors / runs) * 1000) / 1000 : 0, limit: er.threshold, rationale: er.rationale });
    return out;
  };
  const counterRecord = () => Object.fromEntries(counters().map((c) => [`${c.name} [${c.scope}]`, c.value]));
  const howToReset = `npx wakegate supervisor status; npx wakegate supervisor reset --who <you> --reason <what you fixed>; then npx wakegate supervisor release --who <you> --reason <why> (or discard)`;

  const trip = (kind: TripKind, reason: string, by?: { who: string; reason: string }) => {
    // A storm or an error rate during a person's drain turns it into a halt (and pages): the drain
    // let live runs finish, not fail at a high rate or go unnoticed under a looping upstream.
    if (state.mode === 'halted' || (state.mode === 'draining' && kind !== 'storm' && kind !== 'error_rate')) return;
    if (state.mode === 'draining') reason = `${reason} (during trip #${state.trip?.id}, a drain: now halted)`;
    state.mode = kind === 'drain' ? 'draining' : 'halted';
    const t: Trip = { id: state.nextTripId++, kind, at: iso(now()), reason, counters: counterRecord(), ...(by ? { by } : {}) };
    state.trip = t;
    state.trips.push(t);
    if (state.trips.length > KEPT) state.trips.splice(0, state.trips.length - KEPT);
    log.warn('supervisor tripped', { supervisorId: selfId, tripId: t.id, kind, reason });
    if (kind === 'storm' || kind === 'error_rate') {
      actions.push({
        kind: 'page',
        tripId: t.id,
        page: {
          dedupKey: `wakegate/${selfId}/trip-${t.id}`,
          summary: `wakegate halted (trip #${t.id}, ${kind}): ${reason}. Every new wake is held until a person resets it.`,
          severity: 'critical',
          source: `wakegate supervisor (task queue ${taskQueue})`,
          details: { tripId: t.id, kind, reason, at: t.at, counters: t.counters, howToReset },
        },
      });
      const cancel = Object.entries(policy.onTrip)
        .filter(([, v]) => v === 'cancel')
        .map(([a]) => a);
      if (cancel.length) actions.push({ kind: 'stop', agents: cancel, who: 'supervisor', reason: `trip #${t.id}: ${reason}` });
    }
    if (kind === 'halt') actions.push({ kind: 'stop', who: by!.who, reason: `halted by ${by!.who}: ${by!.reason}` });
  };

  /** The breaker watches for storms and error rates while armed, and while draining (runs begun before the patch: armed only). */
  const breakerWatches = () => state.mode === 'armed' || (state.mode === 'draining' && patched('supervisor-trips-while-draining'));

  const checkStorm = (agent: string) => {
    const t = now();
    const fleet = sumOf(state.series[`storm:${FLEET}`], t);
    if (fleet > policy.storm.fleetPerMinute) {
      trip('storm', `${fleet} wakes in the last minute, over the fleet threshold of ${policy.storm.fleetPerMinute}`);
      return;
    }
    const mine = sumOf(state.series[`storm:${agent}`], t);
    if (policy.storm.agentPerMinute !== undefined && mine > policy.storm.agentPerMinute) {
      trip('storm', `${mine} wakes of ${agent} in the last minute, over the per-agent threshold of ${policy.storm.agentPerMinute}`);
    }
  };

  const checkErrorRate = () => {
    const er = policy.errorRate;
    const t = now();
    const scopes = Object.keys(state.series)
      .filter((n) => n.startsWith('runs:'))
      .map((n) => n.slice(5));
    for (const scope of scopes) {
      const runs = sumOf(state.series[`runs:${scope}`], t);
      const errors = sumOf(state.series[`errors:${scope}`], t);
      if (runs >= er.minRuns && errors / runs > er.threshold) {
        const who = scope === FLEET ? 'the fleet' : scope;
        trip('error_rate', `${errors} of the last ${runs} runs of ${who} ended ${er.reasons.join('/')} (${Math.round((errors / runs) * 100)}%), over ${Math.round(er.threshold * 100)}%`);
        return;
      }
    }
  };

  /** Grant up to `want` permits to `agent` against every cap that applies to it; a shortfall holds its runs and pages once. */
  /** Permits granted to `agent` out of `want`, and, when short, the soonest a full cap's window slides (epoch ms). */
  const grant = (agent: string, want: number): { granted: number; freesAtMs?: number } => {
    const t = now();
    let granted = want;
    let full: string | undefined;
    let fullScope = agent;
    let fullWindowMs = 0;
    let freesAtMs: number | undefined;
    for (const { scope, cap } of capsOf(agent)) {
      let room = Infinity;
      const slides: (number | undefined)[] = [];
      if (cap.wakes !== undefined) {
        room = Math.max(0, cap.wakes - sumOf(capSeries(scope, cap, 'permits'), t));
        if (room < want) slides.push(nextSlideMs(state.series[`permits:${scope}:${cap.windowMs}`], t));
      }
      if (cap.costUsd !== undefined && sumOf(capSeries(scope, cap, 'usd'), t) >= cap.costUsd) {
        room = 0;
        slides.push(nextSlideMs(state.series[`usd:${scope}:${cap.windowMs}`], t));
      }
      if (cap.tokens !== undefined && sumOf(capSeries(scope, cap, 'tokens'), t) >= cap.tokens) {
        room = 0;
        slides.push(nextSlideMs(state.series[`tokens:${scope}:${cap.windowMs}`], t));
      }
      // A permit frees up once every full limit of this cap has slid; of all full caps, the latest.
      const known = slides.filter((x): x is number => x !== undefined);
      if (known.length) freesAtMs = Math.max(freesAtMs ?? 0, ...known);
      if (room < granted) {
        granted = room;
        full = capName(cap);
        fullScope = scope;
        fullWindowMs = cap.windowMs;
      }
    }
    for (const { scope, cap } of capsOf(agent)) if (cap.wakes !== undefined) addTo(capSeries(scope, cap, 'permits'), t, granted, t);
    if (state.capPages) for (const [k, p] of Object.entries(state.capPages)) if (t - p.atMs >= p.windowMs) delete state.capPages[k];
    const pagedKey = `${agent}|${fullScope}|${full}`;
    const pagedBefore = granted < want ? state.capPages?.[pagedKey] : undefined;
    if (granted < want && !state.capHolds[agent] && pagedBefore && patched('supervisor-cap-pages-once-per-window')) {
      // Under a steady load over the cap, episodes come and go as the window slides (a permit frees,
      // the next wake is over again): one page per cap's window, not one per slide.
      state.nextCapEpisode++;
      state.capHolds[agent] = { scope: fullScope, cap: full!, sinceMs: t, paged: { dedupKey: pagedBefore.dedupKey, status: `already paged at ${iso(pagedBefore.atMs)}, within the cap's window` } };
    } else if (granted < want && !state.capHolds[agent]) {
      const episode = state.nextCapEpisode++;
      state.capHolds[agent] = { scope: fullScope, cap: full!, sinceMs: t };
      const who = fullScope === FLEET ? 'the fleet' : fullScope;
      const dedupKey = `wakegate/${selfId}/cap-${episode}`;
      if (patched('supervisor-cap-pages-once-per-window')) (state.capPages ??= {})[pagedKey] = { atMs: t, dedupKey, windowMs: fullWindowMs };
      actions.push({
        kind: 'page',
        capAgent: agent,
        capKey: pagedKey,
        page: {
          dedupKey,
          summary: `wakegate: ${who} is over its cap (${full}); wakes of ${agent} are ${policy.overCap[agent] === 'refuse' ? 'refused' : 'held'} until the window slides.`,
          severity: 'warning',
          source: `wakegate supervisor (task queue ${taskQueue})`,
          details: { agent, scope: fullScope, cap: full, counters: counterRecord(), howToInspect: 'npx wakegate supervisor status' },
        },
      });
    } else if (granted === want && state.capHolds[agent]) {
      delete state.capHolds[agent];
    }
    return granted < want && freesAtMs !== undefined ? { granted, freesAtMs } : { granted };
  };

  const status = (): SupervisorStatus => {
    const t = now();
    const recentRuns: Record<string, number> = {};
    for (const [name, s] of Object.entries(state.series)) {
      if (name.startsWith('reason:')) {
        const v = sumOf(s, t);
        if (v) recentRuns[name.slice(7)] = v;
      }
    }
    return {
      supervisorId: selfId,
      mode: state.mode,
      ...(state.trip ? { trip: state.trip } : {}),
      trips: state.trips,
      resets: state.resets,
      releases: state.releases,
      counters: counters(),
      capHolds: state.capHolds,
      recentRuns,
      ...(state.lastObservedAt ? { lastObservedAt: state.lastObservedAt } : {}),
      ...(state.visibilityError ? { visibilityError: state.visibilityError } : {}),
      policy,
    };
  };

  const person = (p: { who?: string; reason?: string } | undefined) => {
    if (!p?.who?.trim() || !p?.reason?.trim()) throw new Error('a person\'s action needs a name (who) and a reason');
  };

  setHandler(wakesSignal, ({ counts }) => {
    const t = now();
    lastActivityMs = t;
    for (const [agent, n] of Object.entries(counts)) {
      addTo(series(`storm:${FLEET}`, 60_000), t, n, t);
      addTo(series(`storm:${agent}`, 60_000), t, n, t);
      if (breakerWatches()) checkStorm(agent);
    }
  });

  setHandler(
    leaseUpdate,
    ({ requests }) => {
      lastActivityMs = now();
      const grants: Record<string, number> = {};
      const retryAfterMs: Record<string, number> = {};
      for (const [agent, want] of Object.entries(requests)) {
        if (state.mode !== 'armed') {
          grants[agent] = 0;
          continue;
        }
        const g = grant(agent, want);
        grants[agent] = g.granted;
        if (g.freesAtMs !== undefined) retryAfterMs[agent] = Math.max(0, g.freesAtMs - now());
      }
      return { grants, mode: state.mode, ...(Object.keys(retryAfterMs).length ? { retryAfterMs } : {}) };
    },
    {
      validator: (r) => {
        if (!r || typeof r.requests !== 'object') throw new Error('lease needs requests');
      },
    },
  );

  setHandler(
    resetUpdate,
    ({ who, reason }) => {
      state.resets.push({ tripId: state.trip?.id ?? 0, who, reason, at: iso(now()) });
      if (state.resets.length > KEPT) state.resets.splice(0, state.resets.length - KEPT);
      log.info('supervisor reset', { supervisorId: selfId, tripId: state.trip?.id, who, reason });
      state.mode = 'armed';
      state.armedSinceMs = now();
      delete state.trip;
      // A person has looked: the storm and error counts that tripped it start afresh. Spend and
      // permits stay: the rolling budgets do not forgive what was spent.
      for (const name of Object.keys(state.series)) if (/^(storm|runs|errors):/.test(name)) delete state.series[name];
      return status();
    },
    {
      validator: (p) => {
        person(p);
        if (state.mode === 'armed') throw new Error('the breaker is armed: nothing to reset');
      },
    },
  );

  setHandler(
    haltUpdate,
    ({ who, reason, drain }) => {
      if (state.mode === 'armed') trip(drain ? 'drain' : 'halt', `${drain ? 'drained' : 'halted'} by ${who}: ${reason}`, { who, reason });
      else if (!drain && state.mode === 'draining') {
        // A drain turned into a halt: the live runs are stopped after all.
        state.mode = 'halted';
        actions.push({ kind: 'stop', who, reason: `halted by ${who}: ${reason}` });
      } else if (!drain) actions.push({ kind: 'stop', who, reason: `halted by ${who}: ${reason}` });
      return status();
    },
    { validator: person },
  );

  setHandler(
    releaseUpdate,
    ({ who, reason, action, agent }) => {
      const t = now();
      const r = { id: state.nextReleaseId++, action, ...(agent ? { agent } : {}), who, reason, at: iso(t), atMs: t };
      state.releases.push(r);
      if (state.releases.length > KEPT) state.releases.splice(0, state.releases.length - KEPT);
      actions.push({ kind: 'nudge', ...(agent ? { agent } : {}) });
      log.info('supervisor release', { supervisorId: selfId, ...r });
      return r;
    },
    {
      validator: (r) => {
        person(r);
        if (r.action !== 'release' && r.action !== 'discard') throw new Error('action is release or discard');
        if (r.action === 'release' && state.mode !== 'armed') {
          throw new Error(`the breaker is ${state.mode} (trip #${state.trip?.id}: ${state.trip?.reason}): reset it first (wakegate supervisor reset --who --reason), then release`);
        }
      },
    },
  );

  setHandler(configureUpdate, (p) => {
    policy = p;
  });
  setHandler(supervisorStatusQuery, status);

  const memoOf = (): SupervisorMemo => ({
    mode: state.mode,
    ...(state.trip ? { tripId: state.trip.id, tripReason: state.trip.reason } : {}),
    capsFull: Object.keys(state.capHolds),
    releases: state.releases,
    ...(state.armedSinceMs ? { armedSinceMs: state.armedSinceMs } : {}),
  });
  const memoChanged = () => JSON.stringify(memoOf()) !== memoJson;
  /** The memo is what every process reads (cached): published before any action, so the gate holds at once. */
  const publish = () => {
    const memo = memoOf();
    const json = JSON.stringify(memo);
    if (json !== memoJson) {
      memoJson = json;
      upsertMemo({ supervisor: memo });
    }
  };

  const pagesInFlight = new Map<Promise<void>, PageAction>();
  /** A page or a stop was set to be made again while the loop waited: it recomputes its next wake-up. */
  let dueAdded = false;
  /** A failed page is still worth sending while its trip stands (not reset) or its cap hold lasts. */
  const pageStillWanted = (a: PageAction): boolean =>
    a.tripId !== undefined ? state.mode !== 'armed' && state.trip?.id === a.tripId : a.capAgent !== undefined && state.capHolds[a.capAgent] !== undefined;
  /** A failed page dropped for good: a cap's page that never got through no longer stands for the cap's window, so its next episode pages. */
  const dropPage = (a: PageAction): void => {
    if (a.capKey && state.capPages?.[a.capKey]?.dedupKey === a.page.dedupKey) delete state.capPages[a.capKey];
  };
  const perform = async (a: Action) => {
    if (a.kind === 'page') {
      let result: NonNullable<Trip['page']>;
      try {
        const r = await sendPage(a.page);
        result = { ...r, at: iso(now()), ...(a.failedSends ? { sends: a.failedSends + 1 } : {}) };
      } catch (err) {
        // The pager's own words (a refusal, a timeout), not the wrapper's "Activity task failed".
        const why = (err instanceof ActivityFailure && err.cause ? err.cause : (err as Error)).message;
        result = { error: why };
        log.error('supervisor could not page', { supervisorId: selfId, dedupKey: a.page.dedupKey, err: why });
        // A trip no one hears of is a halt no one resets: a page whose retries ran out, or that the
        // pager refused, is sent again (same dedup key: one incident) while what it is about stands.
        if (!pageStillWanted(a)) dropPage(a);
        else if (patched('supervisor-pages-resent')) {
          const failedSends = (a.failedSends ?? 0) + 1;
          const dueMs = now() + Math.min(MAX_PAGE_RESEND_MS, (policy.pageResendMs ?? PAGE_RESEND_MS) * 2 ** (failedSends - 1));
          const { kind: _kind, ...again } = a;
          (state.pagesDue ??= []).push({ dueMs, page: { ...again, failedSends } });
          dueAdded = true;
          result = { ...result, resendAt: iso(dueMs), sends: failedSends };
        }
      }
      if (a.tripId !== undefined) for (const t of [state.trip, ...state.trips]) if (t?.id === a.tripId) t.page = result;
      const hold = a.capAgent ? state.capHolds[a.capAgent] : undefined;
      if (hold) hold.paged = 'error' in result ? result : { dedupKey: result.dedupKey, status: result.status };
    } else if (a.kind === 'stop') {
      const done = await visibility('stop live runs', () => stopLiveRuns({ taskQueue, ...(a.agents ? { agents: a.agents } : {}), who: a.who, reason: a.reason }));
      // The kill switch is not lost to a passing outage, nor to visibility's lag: a failed stop is
      // made again until it lands, and one that landed is swept once more a little later.
      if (state.visibilityError?.unavailable || state.mode === 'armed' || !patched('supervisor-stops-retried-and-swept')) return;
      const { kind: _kind, ...stop } = a;
      stop.tripId ??= state.trip?.id;
      const attempt = stop.attempt ?? 0;
      if (!done) (state.stopsDue ??= []).push({ dueMs: now() + Math.min(MAX_STOP_RETRY_MS, Math.max(1000, policy.observeEveryMs) * 2 ** attempt), stop: { ...stop, attempt: attempt + 1 } });
      else if (!stop.sweep) (state.stopsDue ??= []).push({ dueMs: now() + STOP_SWEEP_MS, stop: { ...stop, attempt: 0, sweep: true } });
    } else {
      await visibility('nudge held runs', () => nudgeHeld({ taskQueue, ...(a.agent ? { agent: a.agent } : {}) }));
    }
  };

  /**
   * A call on the visibility API. Its failure never ends the supervisor (a failed supervisor would
   * lose the sticky halt): it is recorded for status and logged, and the next round tries again.
   */
  const visibility = async <T>(what: string, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      const out = await call();
      if (state.visibilityError && !state.visibilityError.unavailable) delete state.visibilityError;
      return out;
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const unavailable = cause instanceof ApplicationFailure && cause.type === 'VisibilityUnavailable';
      const message = `could not ${what}: ${(cause as Error).message}`;
      if (!state.visibilityError || state.visibilityError.message !== message) log.error('supervisor: visibility call failed', { supervisorId: selfId, err: message });
      state.visibilityError = { at: iso(now()), message, ...(unavailable ? { unavailable } : {}) };
      return undefined;
    }
  };

  const observe = async () => {
    const toMs = now() - SETTLE_MS;
    if (toMs <= state.observedToMs || state.visibilityError?.unavailable) return;
    lastObserveAttemptMs = now();
    const read = await visibility('read closed runs', () => observeRuns({ taskQueue, fromMs: state.observedToMs, toMs, limit: OBSERVE_LIMIT }));
    if (!read) return;
    const { closures, truncated } = read;
    const t = now();
    const er = policy.errorRate;
    for (const c of closures) {
      const bad = er.reasons.includes(c.reason) ? 1 : 0;
      for (const scope of [FLEET, c.agent]) {
        addTo(series(`runs:${scope}`, er.windowMs), c.closeMs, 1, t);
        addTo(series(`errors:${scope}`, er.windowMs), c.closeMs, bad, t);
      }
      addTo(series(`reason:${c.reason}`, er.windowMs), c.closeMs, 1, t);
      for (const { scope, cap } of capsOf(c.agent)) {
        if (cap.costUsd !== undefined) addTo(capSeries(scope, cap, 'usd'), c.closeMs, c.costUsd, t);
        if (cap.tokens !== undefined) addTo(capSeries(scope, cap, 'tokens'), c.closeMs, c.tokens, t);
      }
    }
    state.observedToMs = truncated && closures.length ? closures[closures.length - 1]!.closeMs : toMs;
    state.lastObservedAt = iso(t);
    if (closures.length) lastActivityMs = t;
    if (breakerWatches()) checkErrorRate();
  };

  for (;;) {
    publish();
    // Observe while the fleet is active (and a while after, for runs that close late); idle, wait for a wake.
    // Without a visibility API there is nothing to observe: wait for wakes, leases and people only.
    const active = () => !state.visibilityError?.unavailable && now() - lastActivityMs < Math.max(policy.errorRate.windowMs, 60_000);
    // After a failed read, the next one waits a whole round too (no tight loop of retries).
    const nextObserve = Math.max(state.observedToMs + SETTLE_MS, lastObserveAttemptMs) + policy.observeEveryMs;
    // Stops asked for by a trip that a person has since reset are not made.
    const stillWanted = (d: { stop: StopRequest }) => state.mode !== 'armed' && d.stop.tripId === state.trip?.id;
    if (state.stopsDue) state.stopsDue = state.stopsDue.filter(stillWanted);
    if (state.pagesDue) {
      state.pagesDue = state.pagesDue.filter((d) => {
        if (pageStillWanted(d.page)) return true;
        dropPage(d.page);
        return false;
      });
    }
    const dues = [...(state.stopsDue ?? []), ...(state.pagesDue ?? [])];
    const nextDue = dues.length ? Math.min(...dues.map((d) => d.dueMs)) : undefined;
    dueAdded = false;
    let timedOut = false;
    if (active()) timedOut = !(await condition(() => actions.length > 0 || memoChanged() || dueAdded, Math.max(1, Math.min(nextObserve, nextDue ?? Infinity) - now())));
    else if (nextDue !== undefined) await condition(() => actions.length > 0 || memoChanged() || active() || dueAdded, Math.max(1, nextDue - now()));
    else await condition(() => actions.length > 0 || memoChanged() || active() || dueAdded);
    if (state.stopsDue?.length) {
      const t = now();
      for (const d of state.stopsDue.filter((x) => x.dueMs <= t && stillWanted(x))) actions.push({ kind: 'stop', ...d.stop });
      state.stopsDue = state.stopsDue.filter((x) => x.dueMs > t);
      if (!state.stopsDue.length) delete state.stopsDue;
    }
    if (state.pagesDue?.length) {
      const t = now();
      // As for stops: a person may have reset the trip while the loop waited.
      for (const d of state.pagesDue.filter((x) => x.dueMs <= t)) {
        if (pageStillWanted(d.page)) actions.push({ kind: 'page', ...d.page });
        else dropPage(d.page);
      }
      state.pagesDue = state.pagesDue.filter((x) => x.dueMs > t);
      if (!state.pagesDue.length) delete state.pagesDue;
    }
    while (actions.length) {
      publish();
      const a = actions.shift()!;
      // A page retries for minutes when the pager is slow or down: it goes on beside the rest, so
      // stopping live runs (the kill switch), nudges and observation never wait behind it.
      if (a.kind === 'page' && patched('supervisor-pages-in-background')) {
        const { kind: _kind, ...page } = a;
        const paging: Promise<void> = perform(a).finally(() => pagesInFlight.delete(paging));
        pagesInFlight.set(paging, page);
      } else await perform(a);
    }
    if ((timedOut && !(nextDue !== undefined && nextDue < nextObserve)) || now() >= nextObserve) await observe();
    for (const s of Object.values(state.series)) prune(s, now());
    for (const [name, s] of Object.entries(state.series)) if (!s.buckets.length && !name.startsWith('permits:')) delete state.series[name];
    if (workflowInfo().continueAsNewSuggested && !actions.length) {
      // A page in flight may retry for many minutes; waiting for it here would leave a halt that
      // comes meanwhile unpublished and its stop undone. It is sent again from the next run (the
      // same dedup key: one incident). Runs before this rule waited for it.
      const noWait = patched('supervisor-continues-without-waiting-for-pages');
      if (!noWait) await Promise.all(pagesInFlight.keys());
      publish();
      await condition(allHandlersFinished);
      if (noWait && actions.length) continue; // a person's action came in: act on it first
      if (noWait) for (const page of pagesInFlight.values()) if (pageStillWanted(page)) (state.pagesDue ??= []).push({ dueMs: now(), page });
      // The memo goes with it: a next run with none until its first task would read as armed, and a
      // gate or a held run reading it in that moment would pass a halt.
      return makeContinueAsNewFunc<typeof supervisorWorkflow>({ memo: { supervisor: memoOf() } })({ taskQueue, policy, state });
    }
  }

}

