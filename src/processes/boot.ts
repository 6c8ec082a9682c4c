import type { Logger } from 'pino';
import { loadConfig, type Config } from '../config/config';
import { loadApp } from '../runtime/load-app';
import { createLogger, installRuntimeLogger } from '../runtime/logger';
import type { Wakegate } from '../runtime/wakegate';
import { ensureTracing, type Tracing } from '../tracing/provider';

/** What every process of a deployment starts from. */
export interface ProcessContext {
  /** The settings (WAKEGATE_*, TEMPORAL_*), with the command's flags applied. */
  config: Config;
  /** The deployment module (WAKEGATE_APP). */
  app: Wakegate;
  logger: Logger;
  /** Tracing, when the OTEL_* settings ask for it; shut it down last. */
  tracing: Tracing | undefined;
}

/**
 * Start one process of a deployment: parse the settings once (`flags` applied over them), a logger
 * named for the process, the Temporal Runtime's logs routed into it (and its Prometheus metrics on
 * `sdkMetricsAddress` when given), tracing, then load the deployment module.
 */
export function boot(name: string, flags: (config: Config) => Config = (c) => c, opts: { sdkMetricsAddress?: string } = {}): ProcessContext {
  const config = flags(loadConfig());
  const logger = createLogger(config.logLevel, name, config.logFormat);
  installRuntimeLogger(logger, opts.sdkMetricsAddress ? { sdkMetricsAddress: opts.sdkMetricsAddress } : {});
  const tracing = ensureTracing(config.tracing);
  return { config, app: loadApp(config.app), logger, tracing };
}
