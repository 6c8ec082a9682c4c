import type { z } from 'zod';
import { issuesOf } from '../../src/core/args';

// A reply that is one JSON object inside a single Markdown code fence is still that object.
const FENCED = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/;

/**
 * Parse a final answer from model text against the agent's answer schema. Fails closed: prose,
 * truncated or otherwise invalid JSON, or JSON the schema refuses is never read as an answer; it
 * comes back as `{ ok: false, problem }` naming what is wrong, in words the model can act on.
 */
export function parseAnswer<T>(text: string, schema: z.ZodType<T>): { ok: true; answer: T } | { ok: false; problem: string } {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, problem: 'the reply was empty' };
  const body = FENCED.exec(trimmed)?.[1] ?? trimmed;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    return { ok: false, problem: `the reply is not one JSON object (${(err as Error).message})` };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) return { ok: false, problem: `the JSON is not a valid answer: ${issuesOf(parsed.error)}` };
  return { ok: true, answer: parsed.data };
}
