import { z } from 'zod';

/**
 * The name of a tool, an effect or an agent. A model is given tools (and a run's effects) as
 * functions, and providers allow function names of letters, digits, `_` and `-` only: so no `.`,
 * unlike the names of triggers and sources (`Name` in src/core/parse.ts).
 */
export const ToolName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_-]*$/, 'use lower-case letters, digits, "_" or "-", starting with a letter');

/** A version's name: short and plain, as it sits in a search attribute, a span and a CLI argument. */
export const VersionName = z
  .string()
  .min(1)
  .max(32)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a version is letters, digits, ".", "_" or "-", starting with a letter or digit');

export const fn = <T>(what: string): z.ZodType<T> => z.custom<T>((v) => typeof v === 'function', `${what} must be a function`);
// Duck-typed, not `instanceof`: a user's package may bring its own copy of zod 4.
export const isZod = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v && typeof (v as z.ZodType).safeParse === 'function';
export const zodSchema = <T>(what: string): z.ZodType<z.ZodType<T>> => z.custom<z.ZodType<T>>(isZod, `${what} must be a zod 4 schema`);

/** The JSON Schema the model is shown for a zod schema (zod 4's own converter, input side). */
export function jsonSchemaOf(schema: z.ZodType, what: string): Record<string, unknown> {
  try {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    return rest;
  } catch (err) {
    throw new Error(`${what}: its zod schema has no JSON Schema form (${(err as Error).message}); use plain objects, strings, numbers, enums, arrays`);
  }
}

/** A zod object's JSON Schema: a model passes a tool's or an effect's arguments as one JSON object. */
export const objectSchema = (schema: z.ZodType, what: string): ReturnType<typeof jsonSchemaOf> => {
  const json = jsonSchemaOf(schema, what);
  if (json.type !== 'object') throw new Error(`${what} must be a z.object(...) schema: a model passes arguments as one JSON object`);
  return json;
};
