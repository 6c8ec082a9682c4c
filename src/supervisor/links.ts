import type { Client } from '@temporalio/client';
import type { RunVerdict, SupervisorPolicy } from '../core/supervisor-types';
import { SupervisorLink } from './link';

/** A held run's re-check: why it is held, since when, and whether a nudge woke it. */
export interface HeldRun {
  hold: 'halted' | 'cap';
  heldAtMs: number;
  nudged?: boolean;
}

/**
 * A worker process's links to its supervisors: one {@link SupervisorLink} per task queue (its
 * cached memo and the permits leased in blocks), made from the worker's client on first use. The
 * first use also starts the supervisor if needed and brings it this process's policy. A run's first
 * step asks here for its verdict straight from its activity (activities/run/run.ts), and a held
 * run's re-check comes here too (activities/supervisor/supervise.ts).
 */
export class SupervisorLinks {
  private readonly links = new Map<string, Promise<SupervisorLink>>();

  constructor(private readonly opts: { client: () => Client; policy: SupervisorPolicy }) {}

  /** The link of `taskQueue`'s supervisor, made (and its supervisor started) on first use; a failed start is tried again next time. */
  linkFor(taskQueue: string): Promise<SupervisorLink> {
    let link = this.links.get(taskQueue);
    if (!link) {
      const made = new SupervisorLink({ client: this.opts.client(), taskQueue, policy: this.opts.policy });
      link = made.ensure(true).then(() => made);
      link.catch(() => this.links.delete(taskQueue));
      this.links.set(taskQueue, link);
    }
    return link;
  }

  /** The verdict for a run of `agent` about to start (a permit from the process's stock, or hold), or for a held run's re-check. */
  readonly runVerdict = async (taskQueue: string, agent: string, held?: HeldRun): Promise<RunVerdict> =>
    (await this.linkFor(taskQueue)).runVerdict(agent, held);
}
