import { z } from 'zod';
import type { WakeEvent } from '../core/event';
import type { AgentDefinition, AnyArgs, Plan, DecideContext, EffectDefinition, ToolDefinition } from './types';
import type { AgentPolicy } from '../core/policy';
import type { ModelTurn } from '../core/model';
import { Duration, Name, parseDefinition } from '../core/parse';
import { fn, isZod, jsonSchemaOf, ToolName, VersionName, zodSchema } from './schema-parts';
import { DEFAULT_VERSION } from '../core/rollout';
import { versionProblem } from './registry';

export { defineTool, type ToolOptions } from './tool';
export { defineEffect, type EffectOptions } from './effect';
export { jsonSchemaOf } from './schema-parts';

// ---------------------------------------------------------------------------------------------
// Agents

/** The answer an agent gets when it names no schema of its own. */
export const DefaultAnswer = z.object({
  conclusion: z.enum(['commit', 'no_op']),
  summary: z.string().trim().min(1, 'summary must be a non-empty string'),
});
export type DefaultAnswer = z.infer<typeof DefaultAnswer>;

const summaryOf = (answer: unknown): string => {
  const s = (answer as { summary?: unknown } | null)?.summary;
  return typeof s === 'string' && s ? s : JSON.stringify(answer);
};

/** The default plan: `no_op` when the answer says so, else the model's proposals with the answer's summary. */
function defaultDecide(answer: unknown): Plan {
  return (answer as { conclusion?: unknown } | null)?.conclusion === 'no_op' ? { noOp: summaryOf(answer) } : { summary: summaryOf(answer) };
}

const Budget = z.strictObject({
  turns: z.number().int().positive(),
  tokens: z.number().int().positive(),
  toolCalls: z.number().int().positive(),
  wallClock: Duration('budget.wallClock', 1000),
  costUsd: z.number().positive(),
});

const Coalesce = z
  .strictObject({
    debounce: z.strictObject({ period: Duration('coalesce.debounce.period', 0), maxWait: Duration('coalesce.debounce.maxWait', 0) }),
    whileRunning: z.enum(['skip', 'buffer_one', 'cancel', 'steer']),
    idleClose: Duration('coalesce.idleClose', 1000).default(3_600_000),
    dedupHorizon: Duration('coalesce.dedupHorizon', 1000).default(86_400_000),
    maxEventsPerRun: z.number().int().min(1).max(5000).default(1000),
  })
  .refine((c) => c.debounce.maxWait >= c.debounce.period, { path: ['debounce', 'maxWait'], message: 'coalesce.debounce.maxWait must be at least the period' });

const isAgent = (v: unknown) =>
  typeof v === 'object' && v !== null && typeof (v as AgentDefinition).decide === 'function' && typeof (v as AgentDefinition).policy?.name === 'string';
const isTool = (v: unknown) => typeof v === 'object' && v !== null && typeof (v as ToolDefinition).run === 'function' && isZod((v as ToolDefinition).input);
const isEffect = (v: unknown) =>
  typeof v === 'object' && v !== null && typeof (v as EffectDefinition).apply === 'function' && typeof (v as EffectDefinition).class === 'string';

const AgentSchema = z
  .strictObject({
    name: ToolName,
    version: VersionName.default(DEFAULT_VERSION),
    versions: z.array(z.custom<AgentDefinition>(isAgent, 'versions[] must be agent definitions (made with defineAgent)')).default([]),
    description: z.string().min(1),
    triggers: z.array(Name).nonempty(), // trigger names may hold `.`: src/core/parse.ts
    wakeKey: fn<(event: WakeEvent) => string>('wakeKey'),
    wakeKeyRationale: z.string().min(20, 'wakeKeyRationale: say in a sentence what one wake of this agent is about'),
    coalesce: Coalesce.optional(),
    payload: zodSchema<Record<string, unknown>>('payload').optional(),
    mergePayload: fn<AgentDefinition['mergePayload']>('mergePayload').optional(),
    systemPrompt: z.string().default(''),
    model: z
      .strictObject({
        use: fn<ModelTurn>('model.use').optional(),
        maxOutputTokens: z.number().int().positive(),
        inputUsdPerMTok: z.number().min(0),
        outputUsdPerMTok: z.number().min(0),
      })
      .optional(),
    budget: Budget,
    tools: z.array(z.custom<ToolDefinition<AnyArgs>>(isTool, 'tools[] must be made with defineTool')).default([]),
    steps: z.array(ToolName).optional(),
    precheck: ToolName.optional(),
    subagents: z.strictObject({ over: z.string().min(1), tool: ToolName, grant: Budget.omit({ wallClock: true }) }).optional(),
    effects: z.array(z.custom<EffectDefinition<AnyArgs>>(isEffect, 'effects[] must be made with defineEffect')).default([]),
    answer: zodSchema<unknown>('answer').optional(),
    decide: fn<(answer: never, ctx: DecideContext) => Plan>('decide').optional(),
    approval: z
      .strictObject({ irreversible: z.enum(['required', 'auto']), timeout: Duration('approval.timeout', 1000) })
      .default({ irreversible: 'required', timeout: 3_600_000 }),
    shadow: z
      .strictObject({
        candidate: z.custom<AgentDefinition>(isAgent, 'shadow.candidate must be an agent definition (made with defineAgent)'),
        sample: z.number().min(0, 'shadow.sample is a share of runs, 0 to 1').max(1, 'shadow.sample is a share of runs, 0 to 1'),
      })
      .optional(),
  })
  .superRefine((def, ctx) => {
    const tools = new Set(def.tools.map((t) => t.name));
    const named: [string, string | undefined][] = [
      ['precheck', def.precheck],
      ['subagents.tool', def.subagents?.tool],
      ...(def.steps ?? []).map((s, i): [string, string] => [`steps.${i}`, s]),
    ];
    for (const [path, name] of named) {
      if (name && !tools.has(name)) ctx.addIssue({ code: 'custom', path: path.split('.'), message: `no tool named "${name}" in tools` });
    }
    if (tools.size !== def.tools.length) ctx.addIssue({ code: 'custom', path: ['tools'], message: 'tool names must be unique' });
    const effects = new Set(def.effects.map((e) => e.name));
    if (effects.size !== def.effects.length)
      ctx.addIssue({ code: 'custom', path: ['effects'], message: 'effect names must be unique (they are part of the effect key)' });
    for (const name of effects)
      if (tools.has(name))
        ctx.addIssue({ code: 'custom', path: ['effects'], message: `"${name}" names both a tool and an effect: the model could not tell them apart` });
    if (!def.model) {
      if (def.coalesce?.whileRunning === 'steer')
        ctx.addIssue({
          code: 'custom',
          path: ['coalesce', 'whileRunning'],
          message: 'steer gives new events to the model before its next turn: an agent without a model cannot take it',
        });
      if (!def.steps?.length) ctx.addIssue({ code: 'custom', path: ['steps'], message: 'an agent without a model runs steps: name at least one tool' });
      if (def.effects.length)
        ctx.addIssue({ code: 'custom', path: ['effects'], message: 'effects are proposed from a model’s answer: an agent without a model has none' });
    } else {
      if (!def.systemPrompt) ctx.addIssue({ code: 'custom', path: ['systemPrompt'], message: 'an agent with a model needs a systemPrompt' });
      if (!def.effects.length) ctx.addIssue({ code: 'custom', path: ['effects'], message: 'an agent with a model commits at least one effect' });
    }
    def.versions.forEach((other, i) => {
      const problem = versionProblem(def, other, i);
      if (problem) ctx.addIssue({ code: 'custom', path: ['versions', i], message: problem });
    });
    if (def.shadow && def.shadow.candidate.policy.name !== def.name)
      ctx.addIssue({
        code: 'custom',
        path: ['shadow', 'candidate'],
        message: `the candidate defines "${def.shadow.candidate.policy.name}": it must be a version of "${def.name}" (same name)`,
      });
    const waits = def.approval.irreversible === 'required' && def.effects.some((e) => !e.reversible);
    if (waits && def.approval.timeout >= def.budget.wallClock) {
      // Otherwise the wall clock always ends the wait first and the run can never escalate.
      ctx.addIssue({ code: 'custom', path: ['approval', 'timeout'], message: 'the approval timeout must be shorter than the wall-clock budget' });
    }
  });

/** What `defineAgent` takes. Only `name`, `description`, `triggers`, `wakeKey`, `wakeKeyRationale` and `budget` are always required. */
export interface AgentOptions<A = DefaultAnswer> {
  /** Its name: part of every run's workflow ID. @example 'incident-triage' */
  name: string;
  description: string;
  /** Trigger sources that wake it (each must be defined). @example ['incidents', 'schedule'] */
  triggers: [string, ...string[]];
  /** What one wake is about, from any trigger's event: coalescing goes by it. @example (event) => event.entity */
  wakeKey: (event: WakeEvent) => string;
  /** Why the wake key is what it is, in a sentence (at least 20 characters). */
  wakeKeyRationale: string;
  /**
   * Coalescing of wakes per wake key. @default none: every logical event is its own run
   * @example { debounce: { period: '10s', maxWait: '2m' }, whileRunning: 'skip' }
   */
  coalesce?: {
    debounce: { period: string; maxWait: string };
    whileRunning: 'skip' | 'buffer_one' | 'cancel' | 'steer';
    idleClose?: string;
    /**
     * How long an event's key is remembered to answer its redeliveries; the coalescer of a wake key
     * stays open until the newest has passed. Set it to the namespace's retention. @default '24h'
     */
    dedupHorizon?: string;
    /**
     * Events one run holds in full (also at most 300,000 JSON characters of them); past it they are
     * counted in `absorbedOverflow`, and the newest is always kept. @default 1000
     */
    maxEventsPerRun?: number;
  };
  /** The payload it needs from an event, checked at the gate (a bad one is refused before any run). @default any object */
  payload?: z.ZodType<Record<string, unknown>>;
  /** The payload a run works on, from every event it absorbed (newest last). @default the newest event's */
  mergePayload?: (events: { payload: Record<string, unknown> }[]) => Record<string, unknown>;
  /** Required with a model. The answer's JSON Schema is appended to it. */
  systemPrompt?: string;
  /**
   * Its model and prices. `use` is one model turn (`aiSdkModel(anthropic('claude-…'))` or any AI SDK
   * LanguageModel through `aiSdkModel`). @default use: the worker's default model (offline unless configured)
   * @example { use: aiSdkModel(openai('gpt-4.1-mini')), maxOutputTokens: 400, inputUsdPerMTok: 0.4, outputUsdPerMTok: 1.6 }
   */
  model?: { use?: ModelTurn; maxOutputTokens: number; inputUsdPerMTok: number; outputUsdPerMTok: number };
  /** Limits of one run; every dimension is charged before the step that spends it. @example { turns: 6, tokens: 40_000, toolCalls: 12, wallClock: '10m', costUsd: 0.5 } */
  budget: { turns: number; tokens: number; toolCalls: number; wallClock: string; costUsd: number };
  /** Its read-only tools (made with `defineTool`). @default [] */
  tools?: ToolDefinition<AnyArgs>[];
  /** Tools run in order before anything else, each once (a tool-only agent's whole run). */
  steps?: string[];
  /** A cheap tool run before any model turn: `nothingToDo` ends the run `no_op` with no token spent. */
  precheck?: string;
  /** One subagent (child workflow) per item of the payload array `over`: runs `tool` and one model turn on its `grant` from the run's pool. */
  subagents?: { over: string; tool: string; grant: { turns: number; tokens: number; toolCalls: number; costUsd: number } };
  /** The effects it may commit (made with `defineEffect`). @default [] */
  effects?: EffectDefinition<AnyArgs>[];
  /** Its final answer's schema. @default DefaultAnswer: `{ conclusion: 'commit' | 'no_op', summary }` */
  answer?: z.ZodType<A>;
  /**
   * Picks effects from the typed answer, in code. With it, effects are not given to the model;
   * without it, the model proposes effects in its loop and `conclusion: 'no_op'` (if the answer has it) commits nothing.
   * @example (a) => a.severity === 'none' ? { noOp: a.summary } : { summary: a.summary, effects: [{ effect: 'file_ticket', args: { title: a.title } }] }
   */
  decide?: (answer: A, ctx: DecideContext) => Plan;
  /**
   * Irreversible effects wait for a person (`required`) or not (`auto`), up to `timeout`, then the run
   * escalates; the timeout must be shorter than the wall-clock budget when an irreversible effect waits.
   * @default { irreversible: 'required', timeout: '1h' } @example { irreversible: 'required', timeout: '4h' }
   */
  approval?: { irreversible: 'required' | 'auto'; timeout: string };
  /**
   * Live shadow: `sample` of this agent's runs (0 to 1) also run `candidate`, a new version of this
   * agent (same name), on the same events once the real run has ended: its effects recorded, never
   * carried out, its spend drawn from the supervisor's shadow caps. `wakegate shadow report` diffs
   * them. Turning it off is deleting this line. @example { candidate: reporterV2, sample: 0.2 }
   */
  shadow?: { candidate: AgentDefinition; sample: number };
  /**
   * This definition's version, named in every run it makes (search attribute WakeVersion, the trail,
   * metrics). Change it when you change the agent's prompt, model, tools, effects or `decide`.
   * @default 'v1' @example '2026-12-07'
   */
  version?: string;
  /**
   * Other versions the worker can run (same name, own `version`): `wakegate rollout` gives one a
   * share of wake keys; a run keeps its version to its end. The gate reads the wake key, payload and
   * triggers of the exported definition only. Keep a version until its runs have closed. @example [reporterV2]
   */
  versions?: AgentDefinition[];
}

const newest = (events: { payload: Record<string, unknown> }[]) => events[events.length - 1]?.payload ?? {};

/**
 * Validate an agent definition and split it into the plain-JSON policy the workflow runs and the
 * code that stays on the process side. Throws naming every bad field.
 */
export function defineAgent<A = DefaultAnswer>(def: AgentOptions<A>): AgentDefinition {
  const data = parseDefinition(AgentSchema, def, 'agent', def?.name);
  const { budget, approval, coalesce, tools, effects, wakeKey, payload, mergePayload, answer, decide, model, shadow, versions, ...rest } = data;
  const { wallClock, ...limits } = budget;
  const answerSchema = (answer ?? DefaultAnswer) as z.ZodType<unknown>;
  const policy: AgentPolicy = {
    ...rest,
    ...(model ? { model: { maxOutputTokens: model.maxOutputTokens, inputUsdPerMTok: model.inputUsdPerMTok, outputUsdPerMTok: model.outputUsdPerMTok } } : {}),
    ...(coalesce
      ? {
          coalesce: {
            debouncePeriodMs: coalesce.debounce.period,
            maxWaitMs: coalesce.debounce.maxWait,
            whileRunning: coalesce.whileRunning,
            idleCloseMs: coalesce.idleClose,
            dedupHorizonMs: coalesce.dedupHorizon,
            maxEventsPerRun: coalesce.maxEventsPerRun,
          },
        }
      : {}),
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      timeoutMs: t.timeoutMs,
      parameters: jsonSchemaOf(t.input, `tool "${t.name}" input`),
    })),
    effects: effects.map((e) => ({
      name: e.name,
      description: e.description,
      class: e.class,
      reversible: e.reversible,
      parameters: jsonSchemaOf(e.input, `effect "${e.name}" input`),
      timeoutMs: e.timeoutMs,
    })),
    proposedBy: decide ? 'code' : 'model',
    answerSchema: jsonSchemaOf(answerSchema, `agent "${data.name}" answer`),
    budget: { ...limits, wallClockMs: wallClock },
    approval: { irreversible: approval.irreversible, timeoutMs: approval.timeout },
    ...(shadow ? { shadow: { sample: shadow.sample } } : {}),
  };
  return {
    policy,
    wakeKey,
    ...(payload ? { payload } : {}),
    mergePayload: mergePayload ?? newest,
    tools: Object.fromEntries(tools.map((t) => [t.name, t])),
    effects: Object.fromEntries(effects.map((e) => [e.name, e])),
    answer: answerSchema,
    decide: (decide as ((answer: unknown, ctx: DecideContext) => Plan) | undefined) ?? defaultDecide,
    ...(model?.use ? { model: model.use } : {}),
    ...(shadow ? { shadow: { candidate: shadow.candidate, sample: shadow.sample } } : {}),
    ...(versions.length ? { versions: Object.fromEntries(versions.map((v) => [v.policy.version ?? DEFAULT_VERSION, v])) } : {}),
  };
}
