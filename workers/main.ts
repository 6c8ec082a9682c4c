import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../src/config/config';
import { createLogger, installRuntimeLogger } from '../src/runtime/logger';
import { loadApp } from '../src/runtime/load-app';
import { ensureTracing } from '../src/tracing/provider';

/**
 * A standalone wake worker: connects with Temporal's own settings (TEMPORAL_ADDRESS, profiles, TLS,
 * API key), runs the deployment in WAKEGATE_APP and polls WAKEGATE_TASK_QUEUE until SIGINT/SIGTERM, then drains and exits.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'wakegate-worker', config.logFormat);
  installRuntimeLogger(logger);
  // Tracing, when the OTEL_* variables ask for it (docs/OPERATIONS.md, "Tracing").
  const tracing = ensureTracing(config.tracing);
  const connection = await NativeConnection.connect(config.temporal.connectionOptions);
  try {
    const worker = await loadApp(config.app).worker({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.taskQueue,
      activityPollers: config.activityPollers,
      ...(config.workflowCache ? { maxCachedWorkflows: config.workflowCache } : {}),
    });
    logger.info({ taskQueue: config.taskQueue, namespace: config.temporal.namespace, pid: process.pid }, 'worker polling');
    await worker.run();
  } finally {
    await connection.close();
    await tracing?.shutdown();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
