import { shadowRunKey } from './ids';
import type { RecordedToolCall } from './recorded-tools';
import type { RunInput, RunResult } from './run-types';

/*
 * Shadow runs, the parts both sides use (pure: the run workflow starts live shadows with them, the
 * CLI its sessions). A live shadow (`defineAgent({ shadow: { candidate, sample } })`) runs the
 * candidate under the agent's name with `/shadow` after it: agent names are lower-case letters,
 * digits, `_` and `-`, so it is never another agent's, the worker resolves it to the candidate, and
 * the supervisor counts it against the shadow caps only (`capsFor`).
 */

const SUFFIX = '/shadow';

/** The name a live shadow of `agent` runs under (its runs' WakeAgent). */
export const shadowAgentName = (agent: string): string => `${agent}${SUFFIX}`;

/** The agent a shadow name stands for, or undefined for any other name. */
export const shadowedAgent = (name: string): string | undefined => (name.endsWith(SUFFIX) ? name.slice(0, -SUFFIX.length) : undefined);

/**
 * Whether a stop of `agents` (the kill switch a trip or a halt pulls; undefined: every agent)
 * reaches a run recorded under `runAgent`: an agent's runs and its live shadows (`<agent>/shadow`),
 * which would otherwise run on, spending, after their agent was stopped.
 */
export function stopReaches(agents: readonly string[] | undefined, runAgent: string): boolean {
  return agents === undefined || agents.includes(shadowedAgent(runAgent) ?? runAgent);
}

/** The session name live shadows run under: `shadow/live/<runKey>`. */
export const LIVE_SESSION = 'live';

/**
 * Whether a run is in the live shadow's sample: a hash of its key, so the choice is the same on
 * every replay of the workflow and for every worker, and spread evenly. `sample` 0 never, 1 always.
 */
export function inShadowSample(runKey: string, sample: number): boolean {
  if (sample >= 1) return true;
  if (sample <= 0) return false;
  let h = 0x811c9dc5; // FNV-1a, 32 bits
  for (let i = 0; i < runKey.length; i++) {
    h ^= runKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 0x1_0000_0000 < sample;
}

/**
 * Why a recorded run cannot be shadowed faithfully, or undefined when it can: a shadow run sees only
 * the events in the run's input, and its diff compares answers and staged effects.
 */
export function whyNotShadowed(input: Partial<RunInput> | undefined, result: RunResult | undefined): string | undefined {
  if (!input?.runKey || !input.origin) return 'a window its Schedule started: no run input of its own';
  if (!result) return 'no recorded result';
  if (result.steered?.length) return `events were steered into it while it ran (${result.steered.length}), and its input does not hold them`;
  if (input.resumedHold?.steered?.waiting.length) return 'steered events were waiting for its model when it was held, and its input does not hold them';
  if (result.terminalReason === 'cancelled') return 'it was cancelled (a kill, or its coalescer restarted it): no answer or staged effects to compare';
  if (result.terminalReason === 'discarded' || result.terminalReason === 'duplicate' || result.terminalReason === 'skipped')
    return `it ended ${result.terminalReason} without running the agent: nothing to compare`;
  if (input.origin.kind === 'batch' && input.origin.absorbedOverflow)
    return `its batch held ${input.origin.absorbedOverflow} events past its bound, kept as a count only: a shadow would see fewer`;
  return undefined;
}

/** The recorded run a shadow is of: its key, run ID, input, and (`--tools recorded`) its tool calls. */
export interface ShadowOf {
  workflowId: string;
  runId: string;
  input: RunInput;
  tools?: RecordedToolCall[];
}

/**
 * The shadow run of a recorded run: its events, its own ID (`shadow/<session>/<run key>`), origin
 * `shadow` (record-only commit, no coalescer). A live shadow runs under the shadow agent name and
 * takes a permit from the shadow caps; a CLI session's runs under the agent's own name, in a worker
 * of the candidate deployment.
 */
export function shadowInput(session: string, of: ShadowOf, live = false): RunInput {
  const { resumedHold: _held, origin, replay: _replay, ...rest } = of.input;
  return {
    ...rest,
    runKey: shadowRunKey(session, of.workflowId),
    ...(live ? { agent: shadowAgentName(of.input.agent) } : {}),
    origin: {
      kind: 'shadow',
      of: of.workflowId,
      ofRunId: of.runId,
      absorbed: origin.kind === 'batch' ? origin.absorbed : [],
      ...(of.tools ? { tools: of.tools } : {}),
      ...(live ? { live: true } : {}),
    },
  };
}
