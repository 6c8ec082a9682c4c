import type { Priority } from '@temporalio/common';

/**
 * Temporal task priority (keys 1 to 5, 1 first; a task without one is 3), for the workflows a sender
 * or an operator waits on. A task queue's backlog is dispatched by priority, then in order.
 *
 * - A coalescer decides every offer while an HTTP request or a queue message waits for the answer;
 *   the supervisor grants permits at each run's first step and carries the kill switch. Both are
 *   `ADMISSION`: in a storm, their workflow tasks go before the backlog of runs' tasks they share a
 *   task queue with, instead of waiting behind it (a new coalescer's first task waited 1 to 4 s
 *   behind runs' tasks in bench:ingress, and its deliveries ran past their decision deadline).
 * - Children and activities take their parent's priority unless given one, so the runs a coalescer
 *   starts are given `RUN` (Temporal's default key), not the coalescer's.
 */
export const GATE_PRIORITY: Priority = { priorityKey: 1 };
export const RUN_PRIORITY: Priority = { priorityKey: 3 };
