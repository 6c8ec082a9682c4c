import type { CheckVerdict, RolloutInput, TakenEvidence } from '../../src/core/rollout';
import { judgeAll } from './checks';
import { fleetHeld, liveVersion, record, type Turn } from './state';

/*
 * Rolling back: by a person, or by the rollout itself when evidence fails a check. Either way every
 * new wake runs the current version at once (share 0); the candidate's runs in flight finish as they
 * are, or are stopped when the person or a failed check says so. A rollback the rollout made by
 * itself pages once; a person's pages nobody (a person did it).
 */

type Input<K extends RolloutInput['kind']> = Extract<RolloutInput, { kind: K }>;

/** The page's dedup key for the rollback of rollout `n` of an agent: one per rollout, whatever is sent again. */
export const rollbackPageKey = (agent: string, n: number): string => `wakegate/rollout/${agent}/${n}/rollback`;

/** A person rolls the candidate back. */
export function rollback(turn: Turn, input: Input<'rollback'>): string {
  const { m } = turn;
  const stop = input.stopInFlight === true;
  m.phase = 'rolled_back';
  m.share = 0;
  if (stop) stopCandidate(turn, input.who, `rolled back by ${input.who}: ${input.reason}`);
  record(turn, { kind: 'rollback', who: input.who, reason: input.reason, ...(stop ? { stopped: true } : {}) });
  return `${m.candidate} rolled back by ${input.who}: every new wake runs ${m.current}; its runs in flight ${stop ? 'are stopped' : 'finish as they are'}`;
}

function stopCandidate(turn: Turn, who: string, reason: string): void {
  const { m } = turn;
  turn.actions.push({ kind: 'stop', agent: m.agent, version: m.candidate!, who, reason });
}

/**
 * Evidence: the two versions' runs over one window. Acted on only while ramping with the fleet armed,
 * and only when its window began with this rollout (older figures are of an earlier one). Kept for a
 * promote (and for a step's check) while ramping, held or not; a check that fails on it while armed
 * rolls the candidate back by itself. Returns whether it was acted on, and what it did.
 */
export function takeEvidence(turn: Turn, input: Input<'evidence'>): { acted: boolean; message: string } {
  const { m, nowMs } = turn;
  if (m.phase !== 'ramping') return { acted: false, message: `not acted on: nothing is ramping (${m.phase}); every new wake runs ${liveVersion(m)}` };
  if (input.sinceMs < m.startedMs!) return { acted: false, message: `not acted on: its window began before rollout #${m.rollouts} started` };
  const held = fleetHeld(m);
  const evidence: TakenEvidence = { sinceMs: input.sinceMs, current: input.current, candidate: input.candidate, atMs: nowMs, held };
  m.evidence = evidence;
  if (held) return { acted: false, message: `kept, not acted on: the fleet is ${m.fleet}` };
  const checks = judgeAll(m.checks, evidence);
  const failed = checks.filter((v) => v.status === 'fail');
  if (!failed.length) return { acted: true, message: summary(checks) };
  return { acted: true, message: rollBackByItself(turn, failed, { evidence, checks }) };
}

/** How each check stands, in words. */
const summary = (checks: CheckVerdict[]): string => checks.map((v) => `${v.name}: ${v.status} (${v.why})`).join('; ');

/** Failed checks roll the candidate back: recorded as the first failed check's, paged once, its runs stopped if any failed check says stop. */
function rollBackByItself(turn: Turn, failed: CheckVerdict[], figures: { evidence: TakenEvidence; checks: CheckVerdict[] }): string {
  const { m } = turn;
  const who = `check:${failed[0]!.name}`;
  const reason = failed.map((v) => `${v.name}: ${v.why}`).join('; ');
  const stop = failed.some((v) => m.checks.find((c) => c.name === v.name)?.onFail === 'stop');
  m.phase = 'rolled_back';
  m.share = 0;
  const dedupKey = rollbackPageKey(m.agent, m.rollouts);
  const summaryLine = `wakegate rolled back ${m.agent} ${m.candidate} by itself (rollout #${m.rollouts}): ${reason}. Every new wake runs ${m.current}.`;
  turn.actions.push({
    kind: 'page',
    page: {
      dedupKey,
      summary: summaryLine,
      severity: 'error',
      source: `wakegate-rollout/${m.agent}`,
      details: {
        agent: m.agent,
        candidate: m.candidate,
        current: m.current,
        rollout: m.rollouts,
        failed: failed.map((v) => ({ ...v })),
        inFlight: stop ? 'stopped' : 'finish as they are',
      },
    },
  });
  if (stop) stopCandidate(turn, who, `rolled back by ${who}: ${reason}`);
  record(turn, { kind: 'rollback', who, reason, figures, paged: dedupKey, ...(stop ? { stopped: true } : {}) });
  return `rolled back by ${who}: ${reason}`;
}
