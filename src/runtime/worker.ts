import type { NativeConnection } from '@temporalio/worker';
import { bundleWorkflowCode, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from '../core/contracts';
import { activeTracing } from '../tracing/provider';
import { bundlerLogger } from './logger';
import { DEFAULT_WORKFLOW_CACHE, WakegatePlugin } from './plugin';

export interface WakeWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** Activities to register (from `createWakegate(...).activities()`). */
  activities: Activities;
  /**
   * A pre-built workflow bundle (tests bundle once per file); otherwise bundled from workflows/, with
   * the tracing interceptors when tracing is on. A pre-built bundle for a traced worker must include
   * them ({@link tracingWorkflowModules}), or its workflows record no spans.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
  /** How long in-flight activities may finish on shutdown before they are cancelled. */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** Activity task polls kept open at once (Temporal's default 5). */
  activityPollers?: number;
  /**
   * Workflows kept in memory between their tasks (Temporal's sticky cache). @default DEFAULT_WORKFLOW_CACHE
   * Coalescers stay open, idle, until their dedup horizon has passed, so a worker's cache fills with
   * them; past the bound the least recently used is evicted and replays its (short, continued-as-new)
   * history on its next task.
   */
  maxCachedWorkflows?: number;
}

export { DEFAULT_WORKFLOW_CACHE };

/** The workflow interceptor modules of tracing (workflows/tracing.ts), for `bundleWorkflowCode({ workflowInterceptorModules })`. */
export function tracingWorkflowModules(): string[] {
  return [require.resolve('../../workflows/tracing')];
}

/**
 * A worker that runs wake workflows and their activities on one task queue. Scale out by running more.
 * With tracing on in this process (src/tracing/provider.ts), its workflows, activities and its
 * activities' client record spans, and the workflows' spans are exported through a sink.
 */
export async function createWakeWorker(opts: WakeWorkerOptions): Promise<Worker> {
  const tracing = activeTracing();
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    // Bundled here rather than by Worker.create so the bundler's report (webpack's module listing) is
    // logged at debug, not info: it is for someone debugging the bundle, not for every start.
    workflowBundle:
      opts.workflowBundle ??
      (await bundleWorkflowCode({
        workflowsPath: require.resolve('../../workflows'),
        ...(tracing ? { workflowInterceptorModules: tracingWorkflowModules() } : {}),
        logger: bundlerLogger(),
      })),
    ...(opts.identity ? { identity: opts.identity } : {}),
    shutdownGraceTime: opts.shutdownGraceTime ?? '10 seconds',
    maxCachedWorkflows: opts.maxCachedWorkflows ?? DEFAULT_WORKFLOW_CACHE,
    // The poller behavior, not maxConcurrentActivityTaskPolls: SDK 1.24 builds its pollers from the
    // behavior and ignores that option (a worker had 10 activity polls whatever it said).
    ...(opts.activityPollers ? { activityTaskPollerBehavior: { type: 'simple-maximum' as const, maximum: opts.activityPollers } } : {}),
    // What wakegate adds to any worker (its activities, the heartbeat throttle, tracing's interceptors
    // and sink) comes from the plugin a team adds to its own: one definition for both.
    plugins: [new WakegatePlugin(() => opts.activities)],
  });
}
