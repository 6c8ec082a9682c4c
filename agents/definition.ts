import { z } from 'zod';
import type { WakeEvent } from '../triggers/event';
import type { AgentDefinition, EffectRequestContext, ToolImpl } from './plugin';
import type { AgentPolicy } from './policy';
import type { EffectRequest } from '../workflows/contracts';
import { Duration, parseDefinition } from '../definitions/parse';

const Name = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_-]*$/, 'use lower-case letters, digits, "_" or "-", starting with a letter');

const fn = <T>(what: string) => z.custom<T>((v) => typeof v === 'function', `${what} must be a function`);

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
  /** Builds the provider request from the run's input and the model's final answer (process side, in the commit activity). */
  request: fn<(ctx: EffectRequestContext) => EffectRequest>('effects[].request'),
});

const Tool = z.strictObject({
  name: Name,
  description: z.string().min(1),
  timeout: Duration('tool.timeout', 1000).default(120_000),
  run: fn<ToolImpl['run']>('tools[].run'),
});

/**
 * Coalescing per wake key, in the field's vocabulary: `debounce { period, maxWait }` and what a wake
 * does while a run is live (`skip`, `buffer_one`, `cancel`). See {@link CoalescePolicy}.
 */
const Coalesce = z
  .strictObject({
    debounce: z.strictObject({ period: Duration('coalesce.debounce.period', 0), maxWait: Duration('coalesce.debounce.maxWait', 0) }),
    whileRunning: z.enum(['skip', 'buffer_one', 'cancel']),
    idleClose: Duration('coalesce.idleClose', 1000).default(3_600_000),
    maxEventsPerRun: z.number().int().min(1).max(5000).default(1000),
  })
  .refine((c) => c.debounce.maxWait >= c.debounce.period, { path: ['debounce', 'maxWait'], message: 'coalesce.debounce.maxWait must be at least the period' });

/**
 * An agent definition, a plugin: what wakes it and what one wake is about (its wake key, with the
 * reason), how wakes about one key coalesce, what it may spend, its tools (with their code), the
 * effects it commits (each with its class, reversibility and request builder), its approval policy.
 * Validated once at load.
 */
export const AgentDefinitionSchema = z
  .strictObject({
    name: Name,
    description: z.string().min(1),
    triggers: z.array(Name).nonempty(),
    /** What a wake is about, derived from any trigger's event: a campaign id, `repo:package`. */
    wakeKey: fn<(event: WakeEvent) => string>('wakeKey'),
    wakeKeyRationale: z.string().min(20, 'wakeKeyRationale: say in a sentence what one wake of this agent is about'),
    coalesce: Coalesce.optional(),
    /** Payload the agent accepts from any trigger (validated at the gate, per agent). */
    payload: z.custom<z.ZodType<Record<string, unknown>>>((v) => v instanceof z.ZodType, 'payload must be a zod schema').optional(),
    mergePayload: fn<AgentDefinition['mergePayload']>('mergePayload').optional(),
    systemPrompt: z.string().default(''),
    model: z
      .strictObject({
        maxOutputTokens: z.number().int().positive(),
        inputUsdPerMTok: z.number().min(0),
        outputUsdPerMTok: z.number().min(0),
      })
      .optional(),
    budget: Budget,
    tools: z.array(Tool),
    steps: z.array(Name).optional(),
    precheck: Name.optional(),
    subagents: z
      .strictObject({
        over: z.string().min(1),
        tool: Name,
        grant: Budget.omit({ wallClock: true }),
      })
      .optional(),
    effects: z.array(Effect),
    approval: z.strictObject({ irreversible: z.enum(['required', 'auto']), timeout: Duration('approval.timeout', 1000) }),
  })
  .superRefine((def, ctx) => {
    const tools = new Set(def.tools.map((t) => t.name));
    const named: [string, string | undefined][] = [['precheck', def.precheck], ['subagents.tool', def.subagents?.tool], ...(def.steps ?? []).map((s, i): [string, string] => [`steps.${i}`, s])];
    for (const [path, name] of named) {
      if (name && !tools.has(name)) ctx.addIssue({ code: 'custom', path: path.split('.'), message: `no tool named "${name}" in tools` });
    }
    if (tools.size !== def.tools.length) ctx.addIssue({ code: 'custom', path: ['tools'], message: 'tool names must be unique' });
    if (!def.model) {
      if (!def.steps?.length) ctx.addIssue({ code: 'custom', path: ['steps'], message: 'an agent without a model runs steps: name at least one tool' });
      if (def.effects.length) ctx.addIssue({ code: 'custom', path: ['effects'], message: 'effects are committed on a model’s final answer: an agent without a model has none' });
    } else {
      if (!def.systemPrompt) ctx.addIssue({ code: 'custom', path: ['systemPrompt'], message: 'an agent with a model needs a systemPrompt' });
      if (!def.effects.length) ctx.addIssue({ code: 'custom', path: ['effects'], message: 'an agent with a model commits at least one effect' });
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

const newest = (events: { payload: Record<string, unknown> }[]) => events[events.length - 1]?.payload ?? {};

/**
 * Validate an agent definition and split it into the plain-JSON policy the workflow runs and the
 * code that stays on the process side. Throws naming every bad field.
 */
export function defineAgent(def: AgentDefinitionInput): AgentDefinition {
  const data = parseDefinition(AgentDefinitionSchema, def, 'agent', def?.name);
  const { budget, approval, coalesce, tools, effects, wakeKey, payload, mergePayload, ...rest } = data;
  const { wallClock, ...limits } = budget;
  const policy: AgentPolicy = {
    ...rest,
    ...(coalesce
      ? {
          coalesce: {
            debouncePeriodMs: coalesce.debounce.period,
            maxWaitMs: coalesce.debounce.maxWait,
            whileRunning: coalesce.whileRunning,
            idleCloseMs: coalesce.idleClose,
            maxEventsPerRun: coalesce.maxEventsPerRun,
          },
        }
      : {}),
    tools: tools.map((t) => ({ name: t.name, description: t.description, timeoutMs: t.timeout })),
    effects: effects.map(({ request: _request, ...e }) => e),
    budget: { ...limits, wallClockMs: wallClock },
    approval: { irreversible: approval.irreversible, timeoutMs: approval.timeout },
  };
  return {
    policy,
    wakeKey,
    ...(payload ? { payload } : {}),
    mergePayload: mergePayload ?? newest,
    tools: Object.fromEntries(tools.map((t) => [t.name, { name: t.name, description: t.description, run: t.run }])),
    requests: Object.fromEntries(effects.map((e) => [e.name, e.request])),
  };
}
