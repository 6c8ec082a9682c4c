import pino, { type Logger } from 'pino';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';

/** Structured JSON logs on stderr (stdout is kept for command output). */
export function createLogger(level: string, name = 'wakegate'): Logger {
  return pino({ name, level }, pino.destination(2));
}

const LEVELS: Record<string, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Route the Temporal Runtime's logs (worker, workflow `log`, activity `log`) into pino, so a run's
 * trigger key, delivery ids and terminal reason land in the same structured stream. Call before any
 * Worker or NativeConnection is created; later calls are ignored.
 */
export function installRuntimeLogger(logger: Logger, opts: { sdkMetricsAddress?: string } = {}): void {
  const level = logger.level === 'silent' ? 'ERROR' : (logger.level.toUpperCase() as 'INFO');
  try {
    Runtime.install({
      // The SDK's own runtime metrics (workflow and activity task latencies, slots, polls), scraped
      // beside the ingress's /metrics when an address is given.
      ...(opts.sdkMetricsAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: opts.sdkMetricsAddress } } } } : {}),
      logger: new DefaultLogger(level in LEVELS ? level : 'INFO', (entry: LogEntry) => {
        const method = LEVELS[entry.level] ?? 'info';
        logger[method]({ ...(entry.meta ?? {}) }, entry.message);
      }),
    });
  } catch {
    // Already installed in this process (tests create several workers): keep the first.
  }
}
