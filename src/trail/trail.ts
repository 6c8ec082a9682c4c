import type { Client } from '@temporalio/client';
import { msToNumber } from '@temporalio/common/lib/time';
import type { AgentRegistry } from '../agents/registry';
import { wakeKeyProblem } from '../gate/keys';
import { assembleTrail } from './assemble';
import { readRecorded } from './read';
import type { WakeTrail } from './types';

/** Defaults of a trail's window and caps. */
export const TRAIL_DEFAULTS = { since: '24h', maxRuns: 20, maxEvents: 200, queryTimeoutMs: 3000 } as const;

/** A request the trail refuses before reading anything: `code` is stable for scripts (the CLI exits 2, the page answers 404 or 400). */
export class TrailRequestError extends Error {
  override name = 'TrailRequestError';
  constructor(
    readonly code: 'unknown_agent' | 'invalid_wake_key' | 'usage',
    message: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

export interface TrailRequest {
  agent: string;
  wakeKey: string;
  /** How far back: a duration (`24h`, `30m`, `7d`) or an ISO-8601 time. Default 24h. */
  since?: string;
  maxRuns?: number;
  maxEvents?: number;
  /** The end of the window, epoch ms (default: now). */
  nowMs?: number;
}

/** The start of the window, epoch ms: `since` as a duration back from `nowMs`, or as an ISO-8601 time. */
export function windowStart(since: string, nowMs: number): number {
  const text = since.trim();
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const ms = Date.parse(text);
    if (!Number.isFinite(ms)) throw new TrailRequestError('usage', `--since ${since} is not a valid ISO-8601 time`, [{ path: 'since', message: 'not a time' }]);
    if (ms > nowMs) throw new TrailRequestError('usage', `--since ${since} lies in the future`, [{ path: 'since', message: 'in the future' }]);
    return ms;
  }
  let ms: number;
  try {
    ms = msToNumber(text as never);
  } catch {
    throw new TrailRequestError('usage', `--since ${since} is neither a duration (24h, 30m, 7d) nor an ISO-8601 time`, [
      { path: 'since', message: 'not a duration or a time' },
    ]);
  }
  if (!Number.isFinite(ms) || ms <= 0)
    throw new TrailRequestError('usage', `--since ${since} must be a positive duration`, [{ path: 'since', message: 'not positive' }]);
  return nowMs - ms;
}

/** The agent by name, or the refusal that names every known agent. */
export function agentOf(agents: AgentRegistry, name: string): AgentRegistry[string] {
  const agent = agents[name];
  if (agent) return agent;
  const known = Object.keys(agents).sort();
  throw new TrailRequestError('unknown_agent', `no agent "${name}" in this deployment; its agents are ${known.join(', ')}`, [
    { path: 'agent', message: `one of ${known.join(', ')}` },
  ]);
}

function cap(value: number | undefined, fallback: number, what: string): number {
  const n = value ?? fallback;
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new TrailRequestError('usage', `${what} must be a whole number from 1 to 1000`, [{ path: what, message: 'out of range' }]);
  return n;
}

/**
 * The decision trail of one (agent, wake key): what became of every event received about it in the
 * window and what each run did. Refuses an unknown agent or an unusable wake key
 * ({@link TrailRequestError}) before reading anything; read-only against Temporal.
 */
export async function wakeTrail(client: Client, agents: AgentRegistry, req: TrailRequest): Promise<WakeTrail> {
  const agent = agentOf(agents, req.agent);
  const problem = wakeKeyProblem(req.wakeKey);
  if (problem) throw new TrailRequestError('invalid_wake_key', `wake key: ${problem}`, [{ path: 'wakeKey', message: problem }]);
  const nowMs = req.nowMs ?? Date.now();
  const sinceMs = windowStart(req.since ?? TRAIL_DEFAULTS.since, nowMs);
  const maxRuns = cap(req.maxRuns, TRAIL_DEFAULTS.maxRuns, 'maxRuns');
  const maxEvents = cap(req.maxEvents, TRAIL_DEFAULTS.maxEvents, 'maxEvents');
  const recorded = await readRecorded(client, {
    agent: req.agent,
    wakeKey: req.wakeKey,
    coalescing: agent.policy.coalesce !== undefined,
    sinceMs,
    untilMs: nowMs,
    maxRuns,
    maxEvents,
    queryTimeoutMs: TRAIL_DEFAULTS.queryTimeoutMs,
  });
  return assembleTrail(recorded, { maxEvents });
}
