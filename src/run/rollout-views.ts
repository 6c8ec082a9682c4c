import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { rolloutId } from '../core/ids';
import { versionOfView, type RolloutView } from '../core/rollout';

/** How long a worker process trusts a rollout's view before it reads the memo again: a step reaches new runs within about this. */
export const VIEW_TTL_MS = 1000;

interface Cached {
  atMs: number;
  view: Promise<RolloutView | undefined>;
}

/**
 * A worker process's read of its agents' rollouts: each rollout workflow's memo `rollout`
 * (workflows/rollout/), read by describe (no action billed, nothing in the rollout's history) and
 * trusted for {@link VIEW_TTL_MS}. A run's first activity asks here which version it runs, once; the
 * run is pinned to the answer from then on. Only agents that declare other versions ask at all.
 *
 * A read that fails (Temporal unreachable) rejects, so the run's first activity retries rather than
 * guess a version; a rollout never started reads as none.
 */
export class RolloutViews {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly client: () => Client,
    private readonly now: () => number = Date.now,
  ) {}

  /** The version a new wake of `agent` about `wakeKey` gets on `taskQueue`, or undefined for the agent's own definition. */
  async versionFor(taskQueue: string, agent: string, wakeKey: string): Promise<string | undefined> {
    const view = await this.view(taskQueue, agent);
    return view && versionOfView(view, agent, wakeKey);
  }

  /** The rollout's view, read at most once per {@link VIEW_TTL_MS} per rollout (concurrent callers share the read). */
  view(taskQueue: string, agent: string): Promise<RolloutView | undefined> {
    const id = rolloutId(taskQueue, agent);
    const now = this.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.atMs < VIEW_TTL_MS) return hit.view;
    const view = this.read(id);
    this.cache.set(id, { atMs: now, view });
    view.catch(() => this.cache.delete(id));
    return view;
  }

  private async read(id: string): Promise<RolloutView | undefined> {
    try {
      const desc = await this.client().workflow.getHandle(id).describe();
      return desc.memo?.rollout as RolloutView | undefined;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }
}
