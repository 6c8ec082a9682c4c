import type { Logger } from 'pino';

/** One part of a deployment's process (a worker, an ingress, a queue consumer), running. */
export interface RunningPart {
  /** What it is, for logs: `worker`, `ingress`, `queue`. */
  name: string;
  /** Settles when it has stopped: after {@link stop}, or by itself (rejected when it failed). */
  done: Promise<void>;
  /**
   * Drain: take no new work, finish or hand back what is in hand (a worker's activities finish
   * within its grace time, its workflow tasks go back to Temporal; an ingress answers the requests
   * it is reading; a queue consumer settles its messages or leaves them pending for another), then
   * resolve. Safe to call twice.
   */
  stop(): Promise<void>;
}

/**
 * Run `parts` until SIGTERM or SIGINT (or until one of them stops by itself), then stop each in the
 * order given (the triggers before the worker, so no new work arrives while it drains) and wait for
 * all of them. Resolves 0 when every part stopped cleanly, 1 when one failed (logged).
 */
export async function untilStopped(parts: readonly RunningPart[], logger: Logger): Promise<number> {
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const part of parts) await part.stop().catch((err: unknown) => logger.error({ err: (err as Error).message, part: part.name }, 'could not stop'));
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal, parts: parts.map((p) => p.name) }, 'draining: no new work; finishing or handing back what is in hand');
    void stopAll();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  let code = 0;
  try {
    await Promise.all(
      parts.map((part) =>
        part.done.then(
          () => stopAll(),
          (err: unknown) => {
            code = 1;
            logger.error({ err: (err as Error).message, part: part.name }, `${part.name} failed`);
            return stopAll();
          },
        ),
      ),
    );
    await stopAll();
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  logger.info({ parts: parts.map((p) => p.name), code }, 'stopped');
  return code;
}

/** A promise and its resolver: a part's `done` when nothing else says it ended. */
export function settledBy(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The one JSON line a process prints on stdout once it is up: where it listens and what it serves (never a secret). */
export function announce(up: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(up) + '\n');
}
