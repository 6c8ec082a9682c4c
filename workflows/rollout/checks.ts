import { PER_RUN_METRICS, SHARE_METRICS, type CheckVerdict, type EvidenceCheck, type RolloutEvidence, type RolloutStats } from '../../src/core/rollout';

/*
 * A rollout's evidence checks: whether a check is well formed, and what it says of one piece of
 * evidence. Pure, as the rest of the machine.
 */

const METRICS = [...SHARE_METRICS, ...PER_RUN_METRICS, 'shadow_diff'];
const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0;
const isFigure = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** A share in words: 0.125 → "12.5%". */
export const pct = (share: number): string => `${Math.round(share * 1000) / 10}%`;

/** Why a start's checks cannot be taken, or undefined when they can. */
export function checksProblem(checks: unknown): string | undefined {
  if (!Array.isArray(checks) || checks.length === 0) return 'a rollout needs at least one evidence check';
  const names = new Set<string>();
  for (const c of checks as EvidenceCheck[]) {
    const problem = checkProblem(c);
    if (problem) return `check ${JSON.stringify(c?.name ?? '?')}: ${problem}`;
    if (names.has(c.name)) return `two checks are named ${JSON.stringify(c.name)}`;
    names.add(c.name);
  }
  return undefined;
}

function checkProblem(c: EvidenceCheck): string | undefined {
  if (!c || typeof c.name !== 'string' || !c.name.trim()) return 'a check needs a name';
  if (!METRICS.includes(c.metric)) return `metric is one of ${METRICS.join(', ')}`;
  if (c.onFail !== 'finish' && c.onFail !== 'stop') return 'onFail is finish or stop';
  if (!isCount(c.minRuns) || c.minRuns < 1) return 'minRuns is a whole number of runs, at least 1';
  for (const k of ['margin', 'factor', 'bound'] as const) if (c[k] !== undefined && !isFigure(c[k])) return `${k} is a number, 0 or more`;
  if (c.margin !== undefined && !SHARE_METRICS.includes(c.metric)) return `margin applies to ${SHARE_METRICS.join(' and ')} only`;
  if (c.factor !== undefined && !PER_RUN_METRICS.includes(c.metric)) return `factor applies to ${PER_RUN_METRICS.join(', ')} only`;
  if (c.margin === undefined && c.factor === undefined && c.bound === undefined) return 'a check needs a margin, a factor or a bound';
  return undefined;
}

/** Why a version's figures cannot be taken, or undefined when they can. */
export function statsProblem(s: RolloutStats | undefined): string | undefined {
  if (!s || !isCount(s.runs) || !isCount(s.nonSuccess) || !isCount(s.failures)) return 'runs, nonSuccess and failures are counts';
  if (s.nonSuccess > s.runs || s.failures > s.nonSuccess) return 'failures ≤ nonSuccess ≤ runs';
  if (![s.tokensPerRun, s.usdPerRun, s.effectsPerRun].every(isFigure)) return 'tokensPerRun, usdPerRun and effectsPerRun are numbers, 0 or more';
  if (s.shadowDiff !== undefined && !(isFigure(s.shadowDiff) && s.shadowDiff <= 1)) return 'shadowDiff is a share, 0 to 1';
  return undefined;
}

/** A version's figure for a metric: a share of its runs, a figure per run, or its shadow diff. */
function figureOf(s: RolloutStats, metric: EvidenceCheck['metric']): number | undefined {
  switch (metric) {
    case 'non_success':
      return s.runs ? s.nonSuccess / s.runs : undefined;
    case 'failures':
      return s.runs ? s.failures / s.runs : undefined;
    case 'tokens_per_run':
      return s.runs ? s.tokensPerRun : undefined;
    case 'usd_per_run':
      return s.runs ? s.usdPerRun : undefined;
    case 'effects_per_run':
      return s.runs ? s.effectsPerRun : undefined;
    case 'shadow_diff':
      return s.shadowDiff;
  }
}

const show = (metric: EvidenceCheck['metric'], n: number): string =>
  SHARE_METRICS.includes(metric) || metric === 'shadow_diff' ? pct(n) : `${Math.round(n * 1e4) / 1e4}`;

/**
 * One check on one piece of evidence. It waits while the candidate has fewer than its `minRuns` runs
 * or no figure, or while no limit stands (a relative one needs runs of the current version); else it
 * fails iff the candidate's figure is over the least limit that stands.
 */
export function judge(c: EvidenceCheck, e: RolloutEvidence): CheckVerdict {
  const base = { name: c.name, metric: c.metric };
  if (e.candidate.runs < c.minRuns) return { ...base, status: 'waiting', why: `${e.candidate.runs} of the ${c.minRuns} candidate runs it needs` };
  const candidate = figureOf(e.candidate, c.metric);
  if (candidate === undefined) return { ...base, status: 'waiting', why: 'no figure of the candidate yet' };
  const current = figureOf(e.current, c.metric);
  const limits: { limit: number; words: string }[] = [];
  if (current !== undefined && c.margin !== undefined)
    limits.push({ limit: current + c.margin, words: `current ${show(c.metric, current)} + ${pct(c.margin)}` });
  if (current !== undefined && c.factor !== undefined) limits.push({ limit: current * c.factor, words: `${c.factor} × current ${show(c.metric, current)}` });
  if (c.bound !== undefined) limits.push({ limit: c.bound, words: `the bound ${show(c.metric, c.bound)}` });
  const least = limits.sort((x, y) => x.limit - y.limit)[0];
  if (!least) return { ...base, status: 'waiting', candidate, why: 'no runs of the current version to compare with' };
  const runs = SHARE_METRICS.includes(c.metric)
    ? ` (${c.metric === 'failures' ? e.candidate.failures : e.candidate.nonSuccess} of ${e.candidate.runs} runs)`
    : '';
  const fails = candidate > least.limit;
  const why = `${c.metric}: candidate ${show(c.metric, candidate)}${runs} ${fails ? 'over' : 'within'} ${least.words}`;
  return { ...base, status: fails ? 'fail' : 'pass', candidate, ...(current !== undefined ? { current } : {}), limit: least.limit, why };
}

/** Every check on one piece of evidence. */
export const judgeAll = (checks: EvidenceCheck[], e: RolloutEvidence): CheckVerdict[] => checks.map((c) => judge(c, e));
