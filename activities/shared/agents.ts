import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import type { AgentRegistry } from '../../src/agents/registry';
import { FailureType } from '../../src/core/failures';
import { shadowedAgent } from '../../src/core/shadow';
import type { AgentDefinition } from '../../src/agents/types';

/** Live shadows' definitions by the registry they came from: the candidate under the shadow name, made once. */
const shadows = new WeakMap<AgentRegistry, Map<string, AgentDefinition>>();

/**
 * The agent named, or a non-retryable UnknownAgent failure naming it (the run and the commit stage
 * both look agents up). A shadow name (`<agent>/shadow`, src/core/shadow.ts) is the agent's live
 * shadow candidate, under that name and with no shadow of its own.
 */
export function agentOf(agents: AgentRegistry, name: string): AgentDefinition {
  const def = agents[name];
  if (def) return def;
  const of = shadowedAgent(name);
  const candidate = of !== undefined ? agents[of]?.shadow?.candidate : undefined;
  if (!candidate) throw ApplicationFailure.nonRetryable(`no agent named "${name}" is defined in this worker`, FailureType.UnknownAgent);
  const made = shadows.get(agents) ?? new Map<string, AgentDefinition>();
  shadows.set(agents, made);
  let shadow = made.get(name);
  if (!shadow) {
    const { shadow: _own, ...policy } = candidate.policy;
    const { shadow: _its, ...rest } = candidate;
    shadow = { ...rest, policy: { ...policy, name } };
    made.set(name, shadow);
  }
  return shadow;
}

/** A zod error as one line: each issue's path and message. */
export const issuesOf = (error: z.ZodError): string => error.issues.map((i) => `${i.path.join('.') || '(reply)'}: ${i.message}`).join('; ');

/** Arguments checked against a tool's or effect's schema: the parsed value (defaults applied), or what is wrong. */
export function parseArgs<T>(args: unknown, schema: z.ZodType<T>): { ok: true; args: T } | { ok: false; problem: string } {
  const parsed = schema.safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false, problem: `invalid arguments: ${issuesOf(parsed.error)}` };
}
