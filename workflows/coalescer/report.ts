import { CancellationScope, getExternalWorkflowHandle, workflowInfo } from '@temporalio/workflow';
import type { RunEnded } from '../../src/core/coalesce-types';
import { reportEndSignal } from '../../src/core/messages';
import type { CoalescerMachine } from './machine';
import type { LoopFlag } from './handlers';
import type { RunWatch } from './watch';

/** A signal's fate, as a boolean: delivered, or refused (the workflow it was sent to has closed). */
const DELIVERED = [() => true, () => false] as const;

/**
 * This execution is a coalescer reset by hand: a child's close after the reset point is not in its
 * history (a reset reapplies signals only), so it does not follow its runs by `child.result()`.
 */
export function resetByHand(): boolean {
  const info = workflowInfo();
  return Boolean(info.originalExecutionRunId) && info.runId !== info.originalExecutionRunId;
}

/**
 * How a live run comes to report its end by signal (`reportEnd`, then the run's `runEnded`). A run
 * reports nothing unless asked: the coalescer execution that started it learns its end from the
 * child's result, which carries all a signal would (src/core/run-end.ts). Asked, once per run and
 * execution, awaited in the loop (never from a handler: Temporal drops a signal whose sender has
 * continued as new by the time it is delivered):
 * - before this execution continues as new (or closes) with a live run it started: the next
 *   execution is not the run's parent. One signal, only then (a hot key). Refused, the run has
 *   closed: its end is taken from the child's result, which is on its way, before going on;
 * - when this chain adopted a live run of a chain terminated by hand (its end would reach no one),
 *   or a reset by hand left it a run its discarded branch started (by-hand.ts `metTaken`).
 *   Refused, it has closed since: the watch looks at it now.
 * A run asked while it completes reports it all the same (workflows/run/record.ts `reportEnd`).
 * A coalescer reset by hand, or a run no one asked, is found by the watch (watch.ts), as before.
 */
export class ReportAsks {
  private readonly asked = new Set<string>();
  /** Live runs adopted from a chain terminated by hand, to ask. */
  private readonly owed: string[] = [];

  constructor(
    private readonly machine: CoalescerMachine,
    private readonly watch: RunWatch,
    private readonly lookUp: (runKey: string) => Promise<RunEnded | null>,
    private readonly ended: (end: RunEnded) => void,
    private readonly loop: LoopFlag,
  ) {}

  /** A live run adopted (adopt signal): asked at the loop's next turn. */
  adopted(runKey: string): void {
    this.owed.push(runKey);
    this.loop.dirty = true;
  }

  get owes(): boolean {
    return this.owed.length > 0;
  }

  /** Ask the adopted runs; one refused has closed: look at its end now. */
  async sendOwed(): Promise<void> {
    for (let runKey = this.owed.shift(); runKey !== undefined; runKey = this.owed.shift()) {
      if (this.asked.has(runKey) || (await this.ask(runKey))) continue;
      this.watch.soon(this.machine.state.running, runKey);
      const key = runKey;
      void this.lookUp(key)
        .then(
          (end) => end && this.ended(end),
          () => undefined,
        )
        .finally(() => (this.loop.dirty = true));
    }
  }

  /**
   * Before this execution hands over (continues as new): the live run it started, if any, asked to
   * report its end. False when the run had closed (the ask refused): its end, from the child's result,
   * has been taken meanwhile, and the loop looks again.
   */
  async beforeHandOver(children: Map<string, Promise<void>>): Promise<boolean> {
    const running = this.machine.state.running;
    const child = running && children.get(running.runKey);
    if (!running || !child || this.asked.has(running.runKey)) return true;
    if (await this.ask(running.runKey)) return true;
    await child;
    this.loop.dirty = true;
    return false;
  }

  private async ask(runKey: string): Promise<boolean> {
    const coalescerId = this.machine.coalescerId;
    // Not cancellable: a person cancelling the coalescer must not make a delivered ask read as refused.
    const signal = () => getExternalWorkflowHandle(runKey).signal(reportEndSignal, { coalescerId });
    const delivered = await CancellationScope.nonCancellable(signal).then(...DELIVERED);
    if (delivered) this.asked.add(runKey);
    return delivered;
  }
}
