/**
 * 64 bits of a string, deterministic in workflow code (no crypto there): two 32-bit multiplicative
 * hashes mixed into each other, the cyrb53 scheme widened. Returned as its two unsigned 32-bit
 * halves `[high, low]`. What it stands for is persisted (the coalescer's compact seen rows, a
 * rollout's buckets): a change to it changes every stored hash and moves every ramped wake key, so
 * test/unit/rollout-ramp.test.ts pins its values.
 */
export function hash64(text: string): [high: number, low: number] {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return [h2 >>> 0, h1 >>> 0];
}
