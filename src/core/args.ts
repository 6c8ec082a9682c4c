import type { z } from 'zod';

/** A zod error as one line: each issue's path and message. */
export const issuesOf = (error: z.ZodError): string => error.issues.map((i) => `${i.path.join('.') || '(reply)'}: ${i.message}`).join('; ');

/** Arguments checked against a tool's or effect's schema: the parsed value (defaults applied), or what is wrong. */
export function parseArgs<T>(args: unknown, schema: z.ZodType<T>): { ok: true; args: T } | { ok: false; problem: string } {
  const parsed = schema.safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false, problem: `invalid arguments: ${issuesOf(parsed.error)}` };
}
