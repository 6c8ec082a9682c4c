import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';

/** How figures behind `/metrics` are kept: read every `refreshMs`, each read given up after `deadlineMs`, stale after `staleAfterMs`. */
export interface FiguresTiming {
  refreshMs: number;
  deadlineMs: number;
  staleAfterMs: number;
}

/** Read every 15 s, each read given at most 5 s, stale once a minute has passed without a good read. */
export const FIGURES_TIMING: FiguresTiming = { refreshMs: 15_000, deadlineMs: 5_000, staleAfterMs: 60_000 };

/** The last figures read for one name, and when. */
export interface Read<F> {
  value: F;
  atMs: number;
}

/**
 * Figures for `/metrics` read from Temporal in the background, never by a scrape: a read of every
 * name starts when the listener is ready and every `refreshMs` after (one round at a time), each
 * given up after `deadlineMs`; the listener's close stops them. A scrape reads the returned map: the
 * last good figures per name, with when they were read (a failed read keeps the last ones, ageing).
 */
export function keepReading<F>(
  app: FastifyInstance,
  client: Client,
  names: readonly string[],
  read: (name: string) => Promise<F>,
  timing: FiguresTiming,
): Map<string, Read<F>> {
  const figures = new Map<string, Read<F>>();
  // Aborted when the listener closes: a read under way ends then, its answer unused.
  const closing = new AbortController();
  const readOne = async (name: string): Promise<void> => {
    const giveUp = new AbortController();
    const timer = setTimeout(() => giveUp.abort(new Error(`no answer within ${timing.deadlineMs} ms`)), timing.deadlineMs);
    const stop = () => giveUp.abort(new Error('the listener closed'));
    closing.signal.addEventListener('abort', stop, { once: true });
    // The abort ends the gRPC calls; this ends the wait even if something under them does not.
    const givenUp = new Promise<never>((_, reject) => giveUp.signal.addEventListener('abort', () => reject(giveUp.signal.reason as Error), { once: true }));
    try {
      const reading = client.withAbortSignal(giveUp.signal, () => client.withDeadline(Date.now() + timing.deadlineMs, () => read(name)));
      reading.catch(() => undefined);
      figures.set(name, { value: await Promise.race([reading, givenUp]), atMs: Date.now() });
    } catch {
      // The last figures stay, ageing: a stale flag says so.
    } finally {
      clearTimeout(timer);
      closing.signal.removeEventListener('abort', stop);
    }
  };
  let reading: Promise<unknown> | undefined;
  const refresh = () => {
    reading ??= Promise.all(names.map(readOne)).finally(() => (reading = undefined));
  };
  let interval: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    refresh();
    interval = setInterval(refresh, timing.refreshMs);
    interval.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(interval);
    closing.abort();
  });
  return figures;
}
