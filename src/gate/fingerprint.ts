import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth, so equal values always serialise alike. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * sha256 (hex) over the fingerprint fields of a payload: the whole payload, or only the named
 * top-level fields (a field that is absent counts as absent, not as null).
 */
export function fingerprint(payload: Record<string, unknown>, fields: 'payload' | readonly string[]): string {
  const picked = fields === 'payload' ? payload : Object.fromEntries(fields.filter((f) => f in payload).map((f) => [f, payload[f]]));
  return createHash('sha256').update(canonicalJson(picked)).digest('hex');
}
