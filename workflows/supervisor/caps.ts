import { MAX_PREFETCH, type LeaseAnswer, type LeaseRequest } from '../../src/core/permit-types';
import { countedAtOf, forgetExpired, recordBlock } from './blocks';
import { addTo, nextSlideMs, sumOf } from './sliding-window';
import { FLEET, capName, capSeries, capSeriesName, capsOf, iso, sawActivity, selfId, type Turn } from './state';
import { counterRecord } from './status';
import { shadowedAgent } from '../../src/core/shadow';

/*
 * Rolling caps: runs started (permits), spend and tokens over a sliding window, for the fleet and
 * per agent. A full cap holds an agent's runs until the window slides (or the gate refuses its
 * wakes, by policy), and pages once per episode, at most once per the cap's window.
 */

/**
 * Permits for the runs starting on one worker process: none while the breaker is not armed, else
 * what every cap allows for the runs waiting (`requests`), and then, for an agent granted all of
 * those, a block ahead of demand (`prefetch`): at most a quarter of the tightest cap's remaining
 * room and MAX_PREFETCH. Both count in the windows now; the block is recorded for its holder, who
 * hands back what it does not use (./blocks.ts).
 */
export function lease(turn: Turn, req: LeaseRequest): LeaseAnswer {
  const { m, nowMs } = turn;
  sawActivity(m, nowMs);
  forgetExpired(m, nowMs);
  const grants: Record<string, number> = {};
  const retryAfterMs: Record<string, number> = {};
  const prefetched: Record<string, number> = {};
  for (const [agent, want] of Object.entries(req.requests)) {
    if (m.mode !== 'armed') {
      grants[agent] = 0;
      continue;
    }
    const g = grant(turn, agent, want);
    grants[agent] = g.granted;
    if (g.freesAtMs !== undefined) retryAfterMs[agent] = Math.max(0, g.freesAtMs - nowMs);
    const ahead = g.granted === want && req.holder ? prefetch(turn, agent, req.prefetch?.[agent] ?? 0, req.holdMs) : 0;
    if (ahead) {
      prefetched[agent] = ahead;
      recordBlock(turn, req.holder!, agent, ahead, req.holdMs);
    }
  }
  return {
    grants,
    mode: m.mode,
    ...(Object.keys(retryAfterMs).length ? { retryAfterMs } : {}),
    ...(Object.keys(prefetched).length ? { prefetched, atMs: nowMs } : {}),
  };
}

/**
 * Count up to `asked` permits ahead of demand: a quarter of the room every cap has left, MAX_PREFETCH
 * at most. They are counted at the end of their hold, the last instant a run may start on them
 * (./blocks.ts): every span of a cap's window that such a run can fall in counts them.
 */
function prefetch(turn: Turn, agent: string, asked: number, holdMs: number | undefined): number {
  const { m, nowMs } = turn;
  const left = room(turn, agent, Infinity).granted;
  const n = Math.max(0, Math.floor(Math.min(asked, MAX_PREFETCH, left === Infinity ? Infinity : left / 4)));
  const atMs = countedAtOf(nowMs, holdMs);
  if (n) for (const { scope, cap } of capsOf(m.policy, agent)) if (cap.wakes !== undefined) addTo(capSeries(m, scope, cap, 'permits'), atMs, n, nowMs);
  return n;
}

/** How much of `want` every cap that applies to `agent` allows, which cap is the tightest, and when a permit can free up. */
function room(turn: Turn, agent: string, want: number): { granted: number; full?: string; fullScope: string; fullWindowMs: number; freesAtMs?: number } {
  const { m, nowMs } = turn;
  const out: ReturnType<typeof room> = { granted: want, fullScope: agent, fullWindowMs: 0 };
  for (const { scope, cap } of capsOf(m.policy, agent)) {
    let left = Infinity;
    const slides: (number | undefined)[] = [];
    const full = (what: 'usd' | 'tokens', limit: number | undefined) => {
      if (limit === undefined || sumOf(capSeries(m, scope, cap, what), nowMs) < limit) return;
      left = 0;
      slides.push(nextSlideMs(m.series[capSeriesName(scope, cap, what)], nowMs));
    };
    if (cap.wakes !== undefined) {
      left = Math.max(0, cap.wakes - sumOf(capSeries(m, scope, cap, 'permits'), nowMs));
      if (left < want) slides.push(nextSlideMs(m.series[capSeriesName(scope, cap, 'permits')], nowMs));
    }
    full('usd', cap.costUsd);
    full('tokens', cap.tokens);
    // A permit frees up once every full limit of this cap has slid; of all full caps, the latest.
    const known = slides.filter((x): x is number => x !== undefined);
    if (known.length) out.freesAtMs = Math.max(out.freesAtMs ?? 0, ...known);
    if (left < out.granted) Object.assign(out, { granted: left, full: capName(cap), fullScope: scope, fullWindowMs: cap.windowMs });
  }
  return out;
}

/** Grant up to `want` permits to `agent`; a shortfall holds its runs (a cap hold) and pages once per episode and cap window. */
function grant(turn: Turn, agent: string, want: number): { granted: number; freesAtMs?: number } {
  const { m, nowMs } = turn;
  const { granted, full, fullScope, fullWindowMs, freesAtMs } = room(turn, agent, want);
  for (const { scope, cap } of capsOf(m.policy, agent)) if (cap.wakes !== undefined) addTo(capSeries(m, scope, cap, 'permits'), nowMs, granted, nowMs);
  // A live shadow refused a permit ends there (`discarded`): nothing is held, no one is paged.
  if (shadowedAgent(agent) !== undefined) return granted < want && freesAtMs !== undefined ? { granted, freesAtMs } : { granted };
  if (m.capPages) for (const [k, p] of Object.entries(m.capPages)) if (nowMs - p.atMs >= p.windowMs) delete m.capPages[k];
  const short = granted < want;
  const pagedKey = `${agent}|${fullScope}|${full}`;
  const pagedBefore = short ? m.capPages?.[pagedKey] : undefined;
  if (short && !m.capHolds[agent] && pagedBefore) {
    // Under a steady load over the cap, episodes come and go as the window slides (a permit frees,
    // the next wake is over again): one page per cap's window, not one per slide.
    m.nextCapEpisode++;
    m.capHolds[agent] = {
      scope: fullScope,
      cap: full!,
      sinceMs: nowMs,
      paged: { dedupKey: pagedBefore.dedupKey, status: `already paged at ${iso(pagedBefore.atMs)}, within the cap's window` },
    };
  } else if (short && !m.capHolds[agent]) {
    const episode = m.nextCapEpisode++;
    m.capHolds[agent] = { scope: fullScope, cap: full!, sinceMs: nowMs };
    const who = fullScope === FLEET ? 'the fleet' : fullScope;
    const dedupKey = `wakegate/${selfId(m)}/cap-${episode}`;
    (m.capPages ??= {})[pagedKey] = { atMs: nowMs, dedupKey, windowMs: fullWindowMs };
    turn.actions.push({
      kind: 'page',
      capAgent: agent,
      capKey: pagedKey,
      page: {
        dedupKey,
        summary: `wakegate: ${who} is over its cap (${full}); wakes of ${agent} are ${m.policy.overCap[agent] === 'refuse' ? 'refused' : 'held'} until the window slides.`,
        severity: 'warning',
        source: `wakegate supervisor (task queue ${m.taskQueue})`,
        details: { agent, scope: fullScope, cap: full, counters: counterRecord(m, nowMs), howToInspect: 'wakegate supervisor status' },
      },
    });
  } else if (!short && m.capHolds[agent]) {
    delete m.capHolds[agent];
  }
  return short && freesAtMs !== undefined ? { granted, freesAtMs } : { granted };
}
