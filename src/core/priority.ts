import type { Priority } from '@temporalio/common';

/**
 * Temporal task priority (keys 1 to 5, 1 first; a task without one is 3), for the workflows a sender
 * or an operator waits on. A task queue's backlog is dispatched by priority, then in order.
 *
 * - The supervisor grants permits at each run's first step and carries the kill switch: `SUPERVISOR`,
 *   first of all. When a burst of new wake keys leaves thousands of coalescers' tasks queued, its
 *   tasks do not wait behind them: every run waits on it, so a supervisor behind the coalescers
 *   stops every run (20,000 new keys in bench:coalesce: no run finished in 10 min).
 * - A coalescer decides every offer while an HTTP request or a queue message waits for the answer:
 *   `GATE`, before the runs' tasks it shares a task queue with instead of behind them (a new
 *   coalescer's first task waited 1 to 4 s behind runs' tasks in bench:ingress, and its deliveries
 *   ran past their decision deadline).
 * - Children and activities take their parent's priority unless given one, so the runs a coalescer
 *   starts are given `RUN` (Temporal's default key), not the coalescer's.
 */
export const SUPERVISOR_PRIORITY: Priority = { priorityKey: 1 };
export const GATE_PRIORITY: Priority = { priorityKey: 2 };
export const RUN_PRIORITY: Priority = { priorityKey: 3 };
