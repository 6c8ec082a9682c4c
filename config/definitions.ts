import type { z } from 'zod';

/**
 * Parse a definition written in code (trigger, schedule, agent) against its schema; a bad one fails
 * at load time with every problem named: `invalid <kind> definition "<name>": path: message; ...`.
 */
export function parseDefinition<S extends z.ZodType>(schema: S, def: unknown, kind: string, name: unknown): z.output<S> {
  const parsed = schema.safeParse(def);
  if (parsed.success) return parsed.data;
  const where = typeof name === 'string' ? ` "${name}"` : '';
  throw new Error(
    `invalid ${kind} definition${where}: ` + parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
  );
}
