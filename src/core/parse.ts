import { z } from 'zod';
import { msToNumber } from '@temporalio/common/lib/time';

/*
 * How definitions written in code (triggers, schedules, agents) are validated at load: one error
 * format, one duration parser. Not configuration: nothing here reads the environment.
 */

/**
 * Parse a definition written in code (trigger, schedule, agent) against its schema; a bad one fails
 * at load time with every problem named: `invalid <kind> definition "<name>": path: message; ...`.
 */
export function parseDefinition<S extends z.ZodType>(schema: S, def: unknown, kind: string, name: unknown): z.output<S> {
  const parsed = schema.safeParse(def);
  if (parsed.success) return parsed.data;
  const where = typeof name === 'string' ? ` "${name}"` : '';
  throw new Error(`invalid ${kind} definition${where}: ` + parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
}

/**
 * A duration written in a definition ("2s", "15m", "1 hour"), parsed to whole ms; refused with the
 * field named when it is not a duration or is shorter than `minMs`.
 */
export function Duration(what: string, minMs: number): z.ZodType<number, string> {
  return z
    .string()
    .min(1)
    .transform((s, ctx) => {
      let ms: number;
      try {
        ms = msToNumber(s as never);
      } catch {
        ctx.addIssue({ code: 'custom', message: `${what} "${s}" is not a duration (try "30s", "15m", "1h")` });
        return z.NEVER;
      }
      if (!Number.isInteger(ms) || ms < minMs) {
        ctx.addIssue({ code: 'custom', message: `${what} "${s}" must be a whole number of ms, at least ${minMs} ms` });
        return z.NEVER;
      }
      return ms;
    });
}

/** Names used in keys and search attributes: lower-case, digits, `-`, `_`, `.`. */
export const Name = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9._-]*$/, 'use lower-case letters, digits, ".", "_" or "-", starting with a letter');
