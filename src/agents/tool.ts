import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from './types';
import { Duration, parseDefinition } from '../core/parse';
import { ToolName, fn, zodSchema, objectSchema } from './schema-parts';

/** What `defineTool` takes. */
export interface ToolOptions<S extends z.ZodType<Record<string, unknown>>> {
  /** The name the model calls it by: lower-case letters, digits, `_`, `-`. @example 'search_errors' */
  name: string;
  /** What it reads, for the model. */
  description: string;
  /**
   * Its arguments, as a zod object. The model is shown its JSON Schema; a call whose arguments do
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
  name: ToolName,
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
