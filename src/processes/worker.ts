import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Wakegate } from '../runtime/wakegate';
import { boot } from './boot';
import { announce, untilStopped, type RunningPart } from './running';

export interface WorkerPartOptions {
  app: Wakegate;
  config: Config;
  connection: NativeConnection;
  /** Default: the configured namespace. */
  namespace?: string;
  logger: Logger;
}

/**
 * A wake worker polling the configured task queue (WAKEGATE_TASK_QUEUE) with the deployment's agents:
 * runs, coalescers, the supervisor and their activities. Stopping it drains it: it polls no more,
 * its activities in hand finish within the grace time (10 s; past it they are cancelled and retried
 * elsewhere), its workflow tasks go back to Temporal for the next worker.
 */
export async function startWorker(opts: WorkerPartOptions): Promise<RunningPart & { taskQueue: string; namespace: string }> {
  const { config } = opts;
  const namespace = opts.namespace ?? config.temporal.namespace;
  const worker = await opts.app.worker({
    connection: opts.connection,
    namespace,
    taskQueue: config.taskQueue,
    activityPollers: config.activityPollers,
    ...(config.workflowCache ? { maxCachedWorkflows: config.workflowCache } : {}),
  });
  const running = worker.run();
  opts.logger.info({ taskQueue: config.taskQueue, namespace, pid: process.pid }, 'worker polling');
  return {
    name: 'worker',
    taskQueue: config.taskQueue,
    namespace,
    done: running,
    stop: () => {
      // The Temporal Runtime may have begun the shutdown on the same signal.
      if (worker.getState() === 'RUNNING') worker.shutdown();
      return running.catch(() => undefined);
    },
  };
}

export interface WorkerCommandOptions {
  /** host:port for the Temporal SDK's Prometheus metrics (`/metrics`); unset: none. */
  metricsAddress?: string;
}

/**
 * `wakegate worker` (and `workers/main.ts`): a worker alone, connected with Temporal's own settings
 * (TEMPORAL_ADDRESS, profiles, TLS, API key). Prints one JSON line once it polls; on SIGTERM or
 * SIGINT it drains and resolves 0.
 */
export async function runWorker(opts: WorkerCommandOptions = {}): Promise<number> {
  const ctx = boot('wakegate-worker', undefined, opts.metricsAddress ? { sdkMetricsAddress: opts.metricsAddress } : {});
  const connection = await NativeConnection.connect(ctx.config.temporal.connectionOptions);
  try {
    const worker = await startWorker({ app: ctx.app, config: ctx.config, connection, logger: ctx.logger });
    announce({
      process: 'worker',
      temporal: ctx.config.temporal.connectionOptions.address,
      namespace: worker.namespace,
      taskQueue: worker.taskQueue,
      ...(opts.metricsAddress ? { sdkMetrics: `http://${opts.metricsAddress}/metrics` } : {}),
      pid: process.pid,
    });
    return await untilStopped([worker], ctx.logger);
  } finally {
    await connection.close();
    await ctx.tracing?.shutdown();
  }
}
