/**
 * Whether a call failed because Temporal did not answer: gRPC UNAVAILABLE (14) or DEADLINE_EXCEEDED (4)
 * anywhere in its chain of causes. A process already connected meets an unreachable server here, not
 * at connect (src/config/temporal.ts), and says so with the same exit code.
 */
export function isUnreachable(err: unknown): boolean {
  let e = err as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (e.code === 14 || e.code === 4) return true;
    e = e.cause as typeof e;
  }
  return false;
}
