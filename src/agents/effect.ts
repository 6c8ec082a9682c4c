import { z } from 'zod';
import type { EffectContext, EffectDefinition, EffectReceipt } from './types';
import type { OutsideConfig } from '../config/config';
import { Duration, parseDefinition } from '../core/parse';
import { DEFAULT_EFFECT_TIMEOUT_MS } from '../core/policy';
import { ToolName, fn, zodSchema, objectSchema } from './schema-parts';

/** What `defineEffect` takes. */
export interface EffectOptions<S extends z.ZodType<Record<string, unknown>>> {
  /** Its name: part of every effect key (`runKey#name@n<nth>`). @example 'file_ticket' */
  name: string;
  /** What it does, for people (and for the model, when the model proposes effects). */
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
  /**
   * One attempt's time limit, a duration string: past it the attempt is given up and the effect
   * tried again under the same key (six attempts in all, 1, 2, 4, 8 and 16 s apart; a worker that
   * dies is noticed within 5 s by its missing heartbeat). Set it above the provider's slowest
   * answer. @default '30s' @example '2 minutes'
   */
  timeout?: string;
  /** Carry it out. `ctx.effectKey` is the idempotency key; `ctx.attempt` counts retries. */
  apply(args: z.output<S>, ctx: EffectContext): Promise<EffectReceipt>;
  /** `reconcile` only, and required there: the effect an earlier attempt made under `ctx.effectKey`, or undefined. Throw when you cannot tell. */
  find?(ctx: EffectContext): Promise<EffectReceipt | undefined>;
}

const EffectSchema = z
  .strictObject({
    name: ToolName,
    description: z.string().min(1),
    class: z.enum(['idempotent', 'provider_key', 'reconcile']),
    reversible: z.boolean(),
    input: zodSchema<Record<string, unknown>>('effect input').default(() => z.object({})),
    timeout: Duration('effect.timeout', 1000).default(DEFAULT_EFFECT_TIMEOUT_MS),
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
  const { timeout, ...rest } = e;
  return Object.freeze({ ...rest, timeoutMs: timeout, input: e.input as z.ZodType<z.output<S>> }) as EffectDefinition<z.output<S>>;
}
