import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** How often the gate reads its task queue's workflow backlog, at most (one DescribeTaskQueue call, never awaited by an offer). */
const LOOK_EVERY_MS = 1000;
/**
 * Workflow tasks waiting on the task queue past which a new wake key's first event goes by update
 * (answered once a worker has decided it) instead of by start. Default of the gate's `startBacklog`.
 */
export const START_BACKLOG = 1000;

/**
 * The gate's reading of how far the workers are behind: the approximate workflow-task backlog of its
 * task queue (Temporal's DescribeTaskQueue stats), read at most once a second, in the background.
 *
 * A start answers a new key's first event without waiting for a worker, so a burst of new keys is
 * admitted as fast as the server takes starts, and leaves each coalescer's first tasks queued for the
 * workers. Measured at 20,000 new keys on one 2-core machine, a backlog of about 5,000 workflow tasks
 * was dispatched at 9 to 10 tasks a second while 16 to 20 were added, the server at a full core, and
 * no run finished for minutes (coalescers' tasks go first: src/core/priority.ts). Past
 * `maxTasks`, a new key's event takes the update path, which answers once a worker has decided it
 * (or is taken by signal after the decision wait): admission then follows the workers' pace, as it
 * did before starts. It does not bring a long backlog back down: at 20,000 keys with this bound the
 * backlog still reached about 2,400 tasks, dispatched at 7 to 8 a second.
 */
export class Backlog {
  private tasks = 0;
  private lookedAt = 0;
  private looking = false;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly maxTasks = START_BACKLOG,
  ) {}

  /** Whether the last reading was over the bound; a reading older than a second is renewed, not waited for. */
  behind(): boolean {
    if (this.maxTasks === Infinity) return false;
    const now = Date.now();
    if (!this.looking && now - this.lookedAt >= LOOK_EVERY_MS) {
      this.looking = true;
      this.lookedAt = now;
      void this.read().finally(() => (this.looking = false));
    }
    return this.tasks > this.maxTasks;
  }

  /** Workflow tasks waiting at the last reading (for the benchmarks and the metrics). */
  get waiting(): number {
    return this.tasks;
  }

  private async read(): Promise<void> {
    try {
      const res = await this.client.workflowService.describeTaskQueue({
        namespace: this.client.options.namespace,
        taskQueue: { name: this.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        reportStats: true,
      });
      this.tasks = Number(res.stats?.approximateBacklogCount ?? 0);
    } catch {
      // No reading (the server is away, or too old to report stats): take starts; an offer's own call says if the server is away.
      this.tasks = 0;
    }
  }
}
