import type { NativeConnection } from '@temporalio/worker';
import { bundleWorkflowCode, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from '../core/contracts';
import { bundlerLogger } from './logger';

export interface WakeWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** Activities to register (from `createWakegate(...).activities()`). */
  activities: Activities;
  /** A pre-built workflow bundle (tests bundle once per file); otherwise bundled from workflows/. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
  /** How long in-flight activities may finish on shutdown before they are cancelled. */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** Activity task polls kept open at once (Temporal's default 5). */
  activityPollers?: number;
}

/** A worker that runs wake workflows and their activities on one task queue. Scale out by running more. */
export async function createWakeWorker(opts: WakeWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: opts.activities,
    // Bundled here rather than by Worker.create so the bundler's report (webpack's module listing) is
    // logged at debug, not info: it is for someone debugging the bundle, not for every start.
    workflowBundle: opts.workflowBundle ?? (await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: bundlerLogger() })),
    ...(opts.identity ? { identity: opts.identity } : {}),
    shutdownGraceTime: opts.shutdownGraceTime ?? '10 seconds',
    // A run's steps heartbeat every second; sending each (not one per 0.8 × heartbeat timeout) is
    // what lets a kill reach a step within about a second, and a cancelled run waits for that.
    maxHeartbeatThrottleInterval: '1 second',
    // The poller behavior, not maxConcurrentActivityTaskPolls: SDK 1.24 builds its pollers from the
    // behavior and ignores that option (a worker had 10 activity polls whatever it said).
    ...(opts.activityPollers ? { activityTaskPollerBehavior: { type: 'simple-maximum' as const, maximum: opts.activityPollers } } : {}),
  });
}
