/**
 * UTF-8 bytes of a string, as Temporal's JSON payload converter writes it, without encoding it: the
 * coalescer counts what it carries across continue-as-new in the unit the SDK's payload warning
 * (TMPRL1103, 512 KiB) is in. JSON.stringify escapes lone surrogates, so a surrogate is always half
 * of a pair here: 2 of its 4 bytes.
 */
export function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    n += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return n;
}

/** UTF-8 bytes of a value's JSON. */
export const jsonBytes = (value: unknown): number => utf8Bytes(JSON.stringify(value ?? null));
