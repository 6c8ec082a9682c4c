import { z } from 'zod';
import type { AgentPolicy } from './policy';
import { Duration, parseDefinition } from '../config/definitions';

const Name = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_-]*$/, 'use lower-case letters, digits, "_" or "-", starting with a letter');

const Budget = z.strictObject({
  turns: z.number().int().positive(),
  tokens: z.number().int().positive(),
  toolCalls: z.number().int().positive(),
  wallClock: Duration('budget.wallClock', 1000),
  costUsd: z.number().positive(),
});

const Effect = z.strictObject({
  name: Name,
  description: z.string().min(1),
  kind: z.enum(['channel_post', 'export_start', 'pull_request']),
  class: z.enum(['idempotent', 'provider_key', 'reconcile']),
  reversible: z.boolean(),
});

const Tool = z.strictObject({ name: Name, description: z.string().min(1), kind: z.enum(['dashboard_read', 'dependency_check']) });

/**
 * An agent definition: what wakes it, what it may spend, the tools it reads with, the effects it
 * commits (each with its class and reversibility) and its approval policy. Validated once at load.
 */
export const AgentDefinitionSchema = z
  .strictObject({
    name: Name,
    description: z.string().min(1),
    triggers: z.array(Name).nonempty(),
    systemPrompt: z.string().min(1),
    model: z.strictObject({
      maxOutputTokens: z.number().int().positive(),
      inputUsdPerMTok: z.number().min(0),
      outputUsdPerMTok: z.number().min(0),
    }),
    budget: Budget,
    tools: z.array(Tool),
    precheck: Name.optional(),
    subagents: z
      .strictObject({
        over: z.string().min(1),
        tool: Name,
        grant: Budget.omit({ wallClock: true }),
      })
      .optional(),
    effects: z.array(Effect).nonempty(),
    approval: z.strictObject({ irreversible: z.enum(['required', 'auto']), timeout: Duration('approval.timeout', 1000) }),
  })
  .superRefine((def, ctx) => {
    const tools = new Set(def.tools.map((t) => t.name));
    for (const [path, name] of [['precheck', def.precheck], ['subagents.tool', def.subagents?.tool]] as const) {
      if (name && !tools.has(name)) ctx.addIssue({ code: 'custom', path: path.split('.'), message: `no tool named "${name}" in tools` });
    }
    for (const [i, e] of def.effects.entries()) {
      // A PR keyed by branch is the one kind that is idempotent by construction; the others need a key or a look-up.
      if (e.class === 'idempotent' && e.kind !== 'pull_request') {
        ctx.addIssue({ code: 'custom', path: ['effects', i, 'class'], message: `${e.kind} is not idempotent by construction; use provider_key or reconcile` });
      }
    }
    if (def.approval.timeout >= def.budget.wallClock) {
      // Otherwise the wall clock always ends the wait first and the run can never escalate.
      ctx.addIssue({ code: 'custom', path: ['approval', 'timeout'], message: 'the approval timeout must be shorter than the wall-clock budget' });
    }
    if (new Set(def.effects.map((e) => e.name)).size !== def.effects.length) {
      ctx.addIssue({ code: 'custom', path: ['effects'], message: 'effect names must be unique (they are part of the effect key)' });
    }
  });

export type AgentDefinitionInput = z.input<typeof AgentDefinitionSchema>;

/** Validate an agent definition and turn it into the plain-JSON policy the workflow runs. Throws naming every bad field. */
export function defineAgent(def: AgentDefinitionInput): AgentPolicy {
  const data = parseDefinition(AgentDefinitionSchema, def, 'agent', def?.name);
  const { budget, approval, ...rest } = data;
  const { wallClock, ...limits } = budget;
  return { ...rest, budget: { ...limits, wallClockMs: wallClock }, approval: { irreversible: approval.irreversible, timeoutMs: approval.timeout } };
}
