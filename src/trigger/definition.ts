import { z } from 'zod';
import { Duration, Name, parseDefinition } from '../core/parse';

export { Name };

/**
 * A trigger definition: which source it accepts, how its logical event key is built and why, and
 * which payload fields make up the fingerprint. It says what *happened*; which agents it wakes, and
 * what each wake is *about* (the wake key), the agents say (their `triggers` and `wakeKey`). Every
 * trigger (CLI, schedule, webhook, queue) goes through the same gate with one of these. The schema
 * `defineTrigger` checks a definition against; each field is documented on {@link TriggerOptions}.
 */
export const TriggerDefinitionSchema = z.strictObject({
  source: Name,
  description: z.string().min(1),
  wakes: z.enum(['all', 'named']).default('all'),
  eventTypes: z.union([z.literal('*'), z.array(z.string().min(1)).nonempty()]),
  bucket: Duration('bucket', 1000),
  keyRationale: z.string().min(10),
  fingerprint: z.union([z.literal('payload'), z.array(z.string().min(1)).nonempty()]),
  payload: z.custom<z.ZodType<Record<string, unknown>>>((v) => typeof v === 'object' && v !== null && '_zod' in v, 'payload must be a zod 4 schema'),
  runKey: z.custom<(agent: string, event: RunKeyEvent) => string>((v) => typeof v === 'function', 'runKey must be a function').optional(),
});

/** The event a trigger's `runKey` names a run after. */
export interface RunKeyEvent {
  entity: string;
  /** Start of the event's time bucket, epoch ms (UTC). */
  bucketStartMs: number;
}

/** What `defineTrigger` takes: what one logical event of a source is. */
export interface TriggerOptions {
  /** The source's name: the CLI's `--source`, an agent's `triggers`, the first part of every event key. @example 'incidents' */
  source: string;
  /** What this source's events are, for people. */
  description: string;
  /**
   * Which agents an event wakes: `all` agents whose triggers name this source (fan-out), or only the
   * one `named` with the event (a schedule wakes the agent its definition names).
   * @default 'all'
   */
  wakes?: 'all' | 'named';
  /** Event types accepted (at least one); `'*'` accepts any. Another type is refused at the gate (`unknown_event_type`, exit 2). @example ['alert.fired', 'alert.resolved'] */
  eventTypes: '*' | string[];
  /**
   * Width of the time bucket of the event's own occurrence time (`occurredAt`), a duration string of
   * at least one second; buckets are UTC and epoch-aligned. The event key is source, type, entity
   * and the bucket's start, so every delivery about one entity within one bucket is one logical
   * event: decided once, run once, however often it arrives (a redelivery carries the same
   * `occurredAt`). Wider buckets fold more into one event; a new event in the same bucket with other
   * fingerprint values is refused (`mismatch`). No default: say what one event is.
   * @example '1s' (each change its own event; bursts are the coalescer's job) or '1d' (one check a day)
   */
  bucket: string;
  /** Why this key: what one logical event is for this source, at least 10 characters. Written down so the next trigger does not guess. @example 'One logical event per (service, alert, second it fired): a redelivered alert carries the same time.' */
  keyRationale: string;
  /**
   * Payload fields that identify the event's inputs: the same key arriving with different values of
   * these fields is refused (`mismatch`, exit 3). At least one field, or `'payload'`: the whole payload.
   * @example ['service', 'alert']
   */
  fingerprint: 'payload' | string[];
  /** Schema the payload must satisfy (checked at the gate; a bad payload is refused, `invalid_payload`, before any run). @example z.object({ service: z.string() }).passthrough() */
  payload: z.ZodType<Record<string, unknown>>;
  /**
   * The workflow ID of an event's run on the one-call path, when something other than the gate also
   * starts that run under a name of its own (a Temporal Schedule names each window's run
   * `<action id>-<nominal>`): both paths then share one ID, so Temporal refuses the second either way.
   * A coalescing agent does not use it: its coalescer names its runs.
   * @default `agent@eventKey`
   */
  runKey?: (agent: string, event: RunKeyEvent) => string;
}

/** A validated trigger: its options with the defaults filled in and `bucket` in ms. */
export interface TriggerDefinition extends Omit<TriggerOptions, 'wakes' | 'bucket'> {
  /** Which agents an event wakes (see {@link TriggerOptions.wakes}). */
  wakes: 'all' | 'named';
  /** The width of the event's time bucket, ms (see {@link TriggerOptions.bucket}). */
  bucket: number;
}

/** What `defineTrigger` takes (the older name of {@link TriggerOptions}). */
export type TriggerDefinitionInput = TriggerOptions;

/** Validate a trigger definition; a bad one fails at load time with every problem named. */
export function defineTrigger(def: TriggerOptions): TriggerDefinition {
  const parsed: TriggerDefinition = parseDefinition(TriggerDefinitionSchema, def satisfies z.input<typeof TriggerDefinitionSchema>, 'trigger', def?.source);
  return parsed;
}
