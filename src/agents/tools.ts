import { z } from 'zod';
import type { EffectContext, EffectDefinition, EffectReceipt, ToolContext, ToolDefinition, ToolResult } from './plugin';
import type { OutsideConfig } from '../config/config';
import { Duration, parseDefinition } from '../core/parse';

// Shared by tools, effects and agents (src/agents/definition.ts).
export const Name = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_-]*$/, 'use lower-case letters, digits, "_" or "-", starting with a letter');

export const fn = <T>(what: string) => z.custom<T>((v) => typeof v === 'function', `${what} must be a function`);
// Duck-typed, not `instanceof`: a user's package may bring its own copy of zod 4.
export const isZod = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v && typeof (v as z.ZodType).safeParse === 'function';
export const zodSchema = <T>(what: string) => z.custom<z.ZodType<T>>(isZod, `${what} must be a zod 4 schema`);

/** The JSON Schema the model is offered for a zod schema (zod 4's own converter, input side). */
export function jsonSchemaOf(schema: z.ZodType, what: string): Record<string, unknown> {
  try {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    return rest;
  } catch (err) {
    throw new Error(`${what}: its zod schema has no JSON Schema form (${(err as Error).message}); use plain objects, strings, numbers, enums, arrays`);
  }
}

const objectSchema = (schema: z.ZodType, what: string) => {
  const json = jsonSchemaOf(schema, what);
  if (json.type !== 'object') throw new Error(`${what} must be a z.object(...) schema: a model passes arguments as one JSON object`);
  return json;
};

// ---------------------------------------------------------------------------------------------
// Tools

/** What `defineTool` takes. */
export interface ToolOptions<S extends z.ZodType<Record<string, unknown>>> {
  /** The name the model calls it by: lower-case letters, digits, `_`, `-`. @example 'search_errors' */
  name: string;
  /** What it reads, for the model. */
  description: string;
  /**
   * Its arguments, as a zod object. The model is offered its JSON Schema; a call whose arguments do
   * not parse goes back to the model as an error, and `run` never sees it.
   * @default z.object({}) (no arguments)
   * @example z.object({ service: z.string(), sinceMinutes: z.number().int().max(1440).default(60) })
   */
  input?: S;
  /** One call's time limit (the activity's start-to-close timeout). @default '2 minutes' @example '30s' */
  timeout?: string;
  /** The tool's code: reads only (it is retried freely), never an effect. */
  run(args: z.output<S>, ctx: ToolContext): Promise<ToolResult>;
}

const ToolSchema = z.strictObject({
  name: Name,
  description: z.string().min(1),
  input: zodSchema<Record<string, unknown>>('tool input').default(() => z.object({})),
  timeout: Duration('tool.timeout', 1000).default(120_000),
  run: fn<ToolDefinition['run']>('tool run'),
});

/**
 * A tool an agent may call: read-only, retried freely, with typed arguments.
 * @example
 * const searchErrors = defineTool({
 *   name: 'search_errors',
 *   description: 'Recent errors of one service',
 *   input: z.object({ service: z.string() }),
 *   run: async ({ service }, { signal }) => ({ content: JSON.stringify(await tracker.search(service, signal)), changed: true }),
 * });
 */
export function defineTool<S extends z.ZodType<Record<string, unknown>> = z.ZodObject<Record<string, never>>>(
  opts: ToolOptions<S>,
): ToolDefinition<z.output<S>> {
  const t = parseDefinition(ToolSchema, opts, 'tool', opts?.name);
  objectSchema(t.input, `tool "${t.name}" input`);
  return Object.freeze({
    name: t.name,
    description: t.description,
    timeoutMs: t.timeout,
    input: t.input as z.ZodType<z.output<S>>,
    run: t.run as ToolDefinition<z.output<S>>['run'],
  });
}

// ---------------------------------------------------------------------------------------------
// Effects

/** What `defineEffect` takes. */
export interface EffectOptions<S extends z.ZodType<Record<string, unknown>>> {
  /** Its name: part of every effect key (`runKey#name@step`). @example 'file_ticket' */
  name: string;
  description: string;
  /**
   * How a retry is made safe, the seed's first question about every effect:
   * - `idempotent`: doing it again changes nothing (an upsert, a PR keyed by its branch): redone on retry.
   * - `provider_key`: the provider deduplicates by the effect key you pass it (`Idempotency-Key`).
   * - `reconcile`: the provider has no key; every retry first calls `find` (landed → recorded, absent →
   *   redone, cannot tell → the run escalates to a person).
   */
  class: 'idempotent' | 'provider_key' | 'reconcile';
  /** Whether it can be undone. An irreversible effect waits for a person's approval unless the agent's approval policy is `auto`. */
  reversible: boolean;
  /** Its arguments, as a zod object; checked when it is proposed and again before it is carried out. @default z.object({}) */
  input?: S;
  /**
   * For `provider_key`: whether the configured provider honours the key. A worker refuses to start
   * when it does not (that would be a silent duplicate on retry). @default () => true
   */
  keyed?: (outside: OutsideConfig) => boolean;
  /** Carry it out. `ctx.effectKey` is the idempotency key; `ctx.attempt` counts retries. */
  apply(args: z.output<S>, ctx: EffectContext): Promise<EffectReceipt>;
  /** `reconcile` only, and required there: the effect an earlier attempt made under `ctx.effectKey`, or undefined. Throw when you cannot tell. */
  find?(ctx: EffectContext): Promise<EffectReceipt | undefined>;
}

const EffectSchema = z
  .strictObject({
    name: Name,
    description: z.string().min(1),
    class: z.enum(['idempotent', 'provider_key', 'reconcile']),
    reversible: z.boolean(),
    input: zodSchema<Record<string, unknown>>('effect input').default(() => z.object({})),
    keyed: fn<(outside: OutsideConfig) => boolean>('keyed').optional(),
    apply: fn<EffectDefinition['apply']>('apply'),
    find: fn<NonNullable<EffectDefinition['find']>>('find').optional(),
  })
  .superRefine((e, ctx) => {
    if (e.class === 'reconcile' && !e.find)
      ctx.addIssue({ code: 'custom', path: ['find'], message: 'a reconcile effect needs find(ctx): how a retry looks up what an earlier attempt did' });
    if (e.class !== 'reconcile' && e.find)
      ctx.addIssue({ code: 'custom', path: ['find'], message: `find is for reconcile effects; a ${e.class} effect is made safe without it` });
    if (e.class !== 'provider_key' && e.keyed) ctx.addIssue({ code: 'custom', path: ['keyed'], message: 'keyed is for provider_key effects' });
  });

/**
 * An effect an agent may commit: its class, reversibility, typed arguments and its own code. The
 * commit stage runs the class's rule; your code only applies (and finds, for `reconcile`).
 * @example
 * const fileTicket = defineEffect({
 *   name: 'file_ticket', description: 'File one ticket', class: 'reconcile', reversible: true,
 *   input: z.object({ title: z.string() }),
 *   apply: ({ title }, { effectKey, signal }) => tracker.create({ title, reference: effectKey }, signal),
 *   find: ({ effectKey, signal }) => tracker.findByReference(effectKey, signal),
 * });
 */
export function defineEffect<S extends z.ZodType<Record<string, unknown>> = z.ZodObject<Record<string, never>>>(
  opts: EffectOptions<S>,
): EffectDefinition<z.output<S>> {
  const e = parseDefinition(EffectSchema, opts, 'effect', opts?.name);
  objectSchema(e.input, `effect "${e.name}" input`);
  return Object.freeze({ ...e, input: e.input as z.ZodType<z.output<S>> }) as EffectDefinition<z.output<S>>;
}
