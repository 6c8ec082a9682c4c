import { shareBuckets, type RolloutInput, type RolloutState } from '../../src/core/rollout';
import { checksProblem, judgeAll, pct, statsProblem } from './checks';
import { fleetHeld, iso, liveVersion, record, type Turn } from './state';

/*
 * A person's actions on a rollout: start, step, promote, roll back. Each needs a name and a reason,
 * is refused with a reason when the rules say no (never thrown), and once taken is in the history.
 * The workflow applies messages one at a time, so two operators acting at once get one outcome: the
 * second of two promotes is refused (already promoted), two steps apply in order.
 */

type Input<K extends RolloutInput['kind']> = Extract<RolloutInput, { kind: K }>;

const isShare = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= 1;

/** Why the machine refuses `input` as it stands, or undefined when it takes it (an update's validator says the same). */
export function refusal(m: RolloutState, input: RolloutInput): string | undefined {
  switch (input.kind) {
    case 'start':
      return person(input) ?? startRefusal(m, input);
    case 'step':
      return person(input) ?? stepRefusal(m, input);
    case 'promote':
      return person(input) ?? promoteRefusal(m);
    case 'rollback':
      return person(input) ?? (m.phase === 'ramping' ? undefined : notRamping(m));
    case 'evidence':
      return evidenceRefusal(input);
    case 'fleet':
      return ['armed', 'halted', 'draining'].includes(input.mode) ? undefined : 'the fleet is armed, halted or draining';
  }
}

function evidenceRefusal(input: Input<'evidence'>): string | undefined {
  if (typeof input.sinceMs !== 'number' || !Number.isFinite(input.sinceMs)) return 'evidence needs the start of its window (sinceMs)';
  const current = statsProblem(input.current);
  if (current) return `the current version's figures: ${current}`;
  const candidate = statsProblem(input.candidate);
  return candidate && `the candidate's figures: ${candidate}`;
}

function person(p: { who?: unknown; reason?: unknown }): string | undefined {
  return typeof p.who !== 'string' || !p.who.trim() || typeof p.reason !== 'string' || !p.reason.trim()
    ? "a person's action needs a name (who) and a reason"
    : undefined;
}

const held = (m: RolloutState): string => `the fleet is ${m.fleet}: the rollout is held until the supervisor is armed again`;

function notRamping(m: RolloutState): string {
  if (m.phase === 'promoted') return `${m.candidate} is already promoted: to go back, start a rollout of ${m.current}`;
  if (m.phase === 'rolled_back') return `${m.candidate} was rolled back: start a new rollout to try again`;
  return 'nothing is ramping: start a rollout first';
}

function startRefusal(m: RolloutState, input: Input<'start'>): string | undefined {
  if (m.phase === 'ramping') return `${m.candidate} is ramping at ${pct(m.share)}: promote it or roll it back first`;
  if (fleetHeld(m)) return held(m);
  if (typeof input.candidate !== 'string' || !input.candidate.trim()) return 'a rollout needs the candidate version';
  if (input.candidate === liveVersion(m)) return `${input.candidate} is already the version every wake runs`;
  if (!isShare(input.share) || shareBuckets(input.share) === 0) return 'share is a fraction of wake keys over 0, at most 1';
  if (!Number.isInteger(input.minRuns) || input.minRuns < 1) return 'minRuns is a whole number of candidate runs, at least 1';
  return checksProblem(input.checks);
}

function stepRefusal(m: RolloutState, input: Input<'step'>): string | undefined {
  if (m.phase !== 'ramping') return notRamping(m);
  if (fleetHeld(m)) return held(m);
  if (!isShare(input.share)) return 'share is a fraction of wake keys, 0 to 1';
  if (shareBuckets(input.share) === shareBuckets(m.share)) return `the ramp is already at ${pct(m.share)}`;
  return failing(m);
}

/** The first check that fails on the evidence last taken (taken while the fleet was held, not yet acted on), in words. */
function failing(m: RolloutState): string | undefined {
  const fail = m.evidence && judgeAll(m.checks, m.evidence).find((v) => v.status === 'fail');
  return fail && `check ${fail.name} fails on the latest evidence (${fail.why}): roll back, or wait for the next evidence`;
}

function promoteRefusal(m: RolloutState): string | undefined {
  if (m.phase !== 'ramping') return notRamping(m);
  if (fleetHeld(m)) return held(m);
  const e = m.evidence;
  if (!e || e.sinceMs < m.stepMs!) return `no evidence from this step's window (since ${iso(m.stepMs!)}) yet: a promote needs ${m.minRuns} candidate runs`;
  if (e.held) return 'the latest evidence came while the fleet was held: wait for the next';
  if (e.candidate.runs < m.minRuns) return `${e.candidate.runs} candidate runs in this step's window: a promote needs ${m.minRuns}`;
  const open = judgeAll(m.checks, e).find((v) => v.status !== 'pass');
  return open && `check ${open.name} ${open.status === 'fail' ? 'fails' : 'has not passed'}: ${open.why}`;
}

/** A person starts a rollout: the candidate takes `share` of wake keys; the version every wake ran becomes the current one. */
export function start(turn: Turn, input: Input<'start'>): string {
  const { m, nowMs } = turn;
  Object.assign(m, {
    current: liveVersion(m),
    candidate: input.candidate,
    phase: 'ramping',
    share: input.share,
    checks: input.checks,
    minRuns: input.minRuns,
    rollouts: m.rollouts + 1,
    startedMs: nowMs,
    stepMs: nowMs,
  } satisfies Partial<RolloutState>);
  delete m.evidence;
  record(turn, { kind: 'start', who: input.who, reason: input.reason });
  return `rollout #${m.rollouts}: ${m.candidate} takes ${pct(m.share)} of wake keys (current ${m.current})`;
}

/** A person widens or narrows the ramp: a new step, whose window a promote counts runs in. */
export function step(turn: Turn, input: Input<'step'>): string {
  const { m } = turn;
  const from = m.share;
  m.share = input.share;
  m.stepMs = turn.nowMs;
  record(turn, { kind: 'step', who: input.who, reason: input.reason });
  return `${m.candidate} ${input.share > from ? 'widened' : 'narrowed'} from ${pct(from)} to ${pct(m.share)} of wake keys`;
}

/** A person promotes the candidate: every new wake runs it. The figures it went on are in the history. */
export function promote(turn: Turn, input: Input<'promote'>): string {
  const { m } = turn;
  m.phase = 'promoted';
  m.share = 1;
  const evidence = m.evidence!;
  record(turn, { kind: 'promote', who: input.who, reason: input.reason, figures: { evidence, checks: judgeAll(m.checks, evidence) } });
  return `${m.candidate} promoted on ${evidence.candidate.runs} candidate runs: every new wake runs it`;
}
