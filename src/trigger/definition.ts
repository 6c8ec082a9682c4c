import { z } from 'zod';
import { Duration, Name, parseDefinition } from '../core/parse';

export { Name };

/**
 * A trigger definition: which source it accepts, how its logical event key is built and why, and
 * which payload fields make up the fingerprint. It says what *happened*; which agents it wakes, and
 * what each wake is *about* (the wake key), the agents say (their `triggers` and `wakeKey`). Every
 * trigger (CLI, schedule, webhook, queue) goes through the same gate with one of these.
 */
export const TriggerDefinitionSchema = z.strictObject({
  /** The source's name: the CLI's `--source`, an agent's `triggers`, the first part of every event key. @example 'incidents' */
  source: Name,
  /** What this source's events are, for people. */
  description: z.string().min(1),
  /**
   * Which agents an event wakes: `all` agents whose triggers name this source (fan-out), or only the
   * one `named` with the event (a schedule wakes the agent its definition names).
   * @default 'all'
   */
  wakes: z.enum(['all', 'named']).default('all'),
  /** Event types accepted; `'*'` accepts any. @example ['alert.fired', 'alert.resolved'] */
  eventTypes: z.union([z.literal('*'), z.array(z.string().min(1)).nonempty()]),
  /**
   * Width of the time bucket of the event's own occurrence time (UTC, epoch-aligned), as a duration
   * string. Repeated notifications about one change inside a bucket are one logical event.
   * @example '1s' (each change its own event; bursts are the coalescer's job) or '1d' (one check a day)
   */
  bucket: Duration('bucket', 1000),
  /** Why this key: what one logical event is for this source. Written down so the next trigger does not guess. @example 'One logical event per (service, alert, second it fired): a redelivered alert carries the same time.' */
  keyRationale: z.string().min(10),
  /**
   * Payload fields that identify the event's inputs: the same key arriving with different values of
   * these fields is refused (`mismatch`). `'payload'` means the whole payload.
   * @example ['service', 'alert']
   */
  fingerprint: z.union([z.literal('payload'), z.array(z.string().min(1)).nonempty()]),
  /** Schema the payload must satisfy (checked at the gate; a bad payload is refused before any run). @example z.object({ service: z.string() }).passthrough() */
  payload: z.custom<z.ZodType<Record<string, unknown>>>((v) => typeof v === 'object' && v !== null && '_zod' in v, 'payload must be a zod 4 schema'),
  /**
   * The workflow ID of an event's run on the one-call path, when something other than the gate also
   * starts that run under a name of its own (a Temporal Schedule names each window's run
   * `<action id>-<nominal>`): both paths then share one ID, so Temporal refuses the second either way.
   * A coalescing agent does not use it: its coalescer names its runs.
   * @default `agent@eventKey`
   */
  runKey: z
    .custom<(agent: string, event: { entity: string; bucketStartMs: number }) => string>((v) => typeof v === 'function', 'runKey must be a function')
    .optional(),
});

export type TriggerDefinitionInput = z.input<typeof TriggerDefinitionSchema>;
export type TriggerDefinition = z.output<typeof TriggerDefinitionSchema>;

/** Validate a trigger definition; a bad one fails at load time with every problem named. */
export function defineTrigger(def: TriggerDefinitionInput): TriggerDefinition {
  return parseDefinition(TriggerDefinitionSchema, def, 'trigger', def?.source);
}
