import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import type { AgentRegistry } from '../../src/agents/registry';
import { FailureType } from '../../src/core/failures';

/** The agent named, or a non-retryable UnknownAgent failure naming it (the run and the commit stage both look agents up). */
export function agentOf(agents: AgentRegistry, name: string) {
  const def = agents[name];
  if (!def) throw ApplicationFailure.nonRetryable(`no agent named "${name}" is defined in this worker`, FailureType.UnknownAgent);
  return def;
}

/** A zod error as one line: each issue's path and message. */
export const issuesOf = (error: z.ZodError) => error.issues.map((i) => `${i.path.join('.') || '(reply)'}: ${i.message}`).join('; ');

/** Arguments checked against a tool's or effect's schema: the parsed value (defaults applied), or what is wrong. */
export function parseArgs<T>(args: unknown, schema: z.ZodType<T>): { ok: true; args: T } | { ok: false; problem: string } {
  const parsed = schema.safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false, problem: `invalid arguments: ${issuesOf(parsed.error)}` };
}
