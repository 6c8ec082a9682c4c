import type { TrailRun } from './types';

/**
 * A run's budget in words, each dimension as used / limit (the limit as the run's first step read
 * it; the budget counts tool calls and effects together): `turns 2/6, tool calls and effects 3/12, tokens 600/40000, cost $0.002/$0.5, wall clock 900/21600000 ms`.
 * Undefined for a run that spent from no budget (a tool-only agent, or one that never began its work).
 */
export function budgetUsed(r: Pick<TrailRun, 'usage' | 'budget'>): string | undefined {
  const u = r.usage;
  if (!u) return undefined;
  const of = (used: number, limit: number | undefined) => (limit === undefined ? `${used}` : `${used}/${limit}`);
  const b = r.budget;
  return [
    `turns ${of(u.turns, b?.turns)}`,
    `tool calls and effects ${of(u.toolCalls, b?.toolCalls)}`,
    `tokens ${of(u.tokens, b?.tokens)}`,
    `cost $${u.costUsd}${b ? `/$${b.costUsd}` : ''}`,
    `wall clock ${of(u.wallClockMs, b?.wallClockMs)} ms`,
  ].join(', ');
}
