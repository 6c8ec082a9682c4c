import type { CoalescePathContext } from '../coalescer/path';

/** What both paths need: the coalescing path's context (client, offer queue, delivery queue, decision wait), and the task queue the one-call path starts runs on. */
export interface PathContext extends CoalescePathContext {
  taskQueue: string;
}
