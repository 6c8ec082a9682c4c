/** Pure time formatting shared by workflows, the gate and activities (no clock is read here). */

/** ISO-8601 UTC at second precision, e.g. `2026-12-02T14:00:00Z`, from epoch milliseconds. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
