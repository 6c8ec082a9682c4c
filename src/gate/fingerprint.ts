import { createHash } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json';

export { canonicalJson };

/**
 * sha256 (hex) over the fingerprint fields of a payload: the whole payload, or only the named
 * top-level fields (a field that is absent counts as absent, not as null).
 */
export function fingerprint(payload: Record<string, unknown>, fields: 'payload' | readonly string[]): string {
  const picked = fields === 'payload' ? payload : Object.fromEntries(fields.filter((f) => f in payload).map((f) => [f, payload[f]]));
  return createHash('sha256').update(canonicalJson(picked)).digest('hex');
}
