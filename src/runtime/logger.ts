import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Logger as TemporalLogger, LogLevel, LogMetadata } from '@temporalio/common';
import type { LogFormat } from '../config/config';

/**
 * Whether logs are written for people: `pretty` (pino-pretty: time, level, message, then fields) or
 * `json` (one pino JSON object a line). `auto` is pretty when stderr is a terminal, JSON otherwise
 * (a pipe, a file, a log collector).
 */
export function prettyLogs(format: LogFormat, stderrIsTTY = process.stderr.isTTY === true): boolean {
  return format === 'pretty' || (format === 'auto' && stderrIsTTY);
}

/**
 * The process's logger, on stderr (stdout is kept for command output): pino JSON lines, or
 * human-readable lines from pino-pretty when {@link prettyLogs} says so. Both are synchronous, so a
 * crash does not lose the last lines.
 */
export function createLogger(level: string, name = 'wakegate', format: LogFormat = 'json'): Logger {
  if (prettyLogs(format)) {
    return pino(
      { name, level },
      pretty({
        destination: 2,
        sync: true,
        colorize: process.stderr.isTTY === true,
        singleLine: true,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname',
      }),
    );
  }
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

/**
 * A logger for the workflow bundler: its report (webpack's whole module listing, "Workflow bundle
 * created") goes to `debug` on `base`; warnings and errors (a failed bundle, a disallowed module)
 * keep their level. `base` defaults to the Temporal Runtime's logger (see {@link installRuntimeLogger}).
 */
export function bundlerLogger(base: TemporalLogger = Runtime.instance().logger): TemporalLogger {
  const at = (level: LogLevel) => (level === 'WARN' || level === 'ERROR' ? level : 'DEBUG');
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => base.log(at(level), message, { ...meta, sdkComponent: 'bundler' });
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
