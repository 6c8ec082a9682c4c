import { ApplicationFailure, activityInfo, getClient, log } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { SupervisorLink } from '../../src/supervisor/link';
import type { Pager } from '../../src/supervisor/pager';
import type { SupervisorActivities } from '../../src/core/contracts';
import { holdNudgeSignal } from '../../src/core/supervisor-messages';
import { killUpdate } from '../../src/core/messages';
import { WakeAgent, WakeCostUsd, WakeHeld, WakeTerminalReason, WakeTokens } from '../../src/core/search-attributes';
import { recoverTerminatedCoalescers } from '../coalescer/recover';
import { stopReaches } from '../../src/core/shadow';
import type { RunClosure, RunVerdict, SupervisorPolicy } from '../../src/core/supervisor-types';

/** Runs handled at once when stopping or nudging many. */
const FAN_OUT = 16;
/** A run that started just before a halt may not be in visibility yet: a second sweep this much later finds it. */
const SECOND_SWEEP_MS = 2000;

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!).catch(() => undefined);
    }),
  );
}

/** gRPC UNIMPLEMENTED: the server has no visibility API (Temporal's time-skipping test server). */
const UNIMPLEMENTED = 12;

/**
 * A server with no visibility API is not a fault: non-retryable, and BENIGN, so the worker logs the
 * failed activity at DEBUG without a stack (the supervisor says it once, at info). Any other
 * visibility failure stays a plain failure, logged as a WARN and retried.
 */
export function visibilityUnavailable(): ApplicationFailure {
  return ApplicationFailure.create({
    message: 'this Temporal server has no visibility API (list workflows)',
    type: 'VisibilityUnavailable',
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
  });
}

/** Up to `bound` workflows the query lists; `VisibilityUnavailable` (benign) on a server with no visibility API. */
export async function listAll(client: Pick<Client, 'workflow'>, query: string, bound: number): Promise<WorkflowExecutionInfo[]> {
  const out: WorkflowExecutionInfo[] = [];
  try {
    for await (const info of client.workflow.list({ query })) {
      out.push(info);
      if (out.length >= bound) break;
    }
  } catch (err) {
    const code = (err as { cause?: { code?: number } }).cause?.code;
    if (code === UNIMPLEMENTED) throw visibilityUnavailable();
    throw err;
  }
  return out;
}

const runsOf = (taskQueue: string) => `WorkflowType = 'runWorkflow' AND TaskQueue = ${quote(taskQueue)}`;
/**
 * The closed runs the supervisor judges, oldest first: the terminal reason and spend each run recorded
 * on itself (a run that recorded no reason, terminated or timed out, counts as failed). A schedule's
 * window that did not run the agent (`duplicate`: already taken; `skipped`: declined by its catch-up
 * policy) is not a run to judge.
 */
export function closuresOf(found: Pick<WorkflowExecutionInfo, 'typedSearchAttributes' | 'closeTime'>[], toMs: number): RunClosure[] {
  return found
    .map((info) => ({
      agent: info.typedSearchAttributes.get(WakeAgent) ?? '(unknown)',
      reason: info.typedSearchAttributes.get(WakeTerminalReason) ?? 'failed',
      closeMs: info.closeTime?.getTime() ?? toMs,
      costUsd: info.typedSearchAttributes.get(WakeCostUsd) ?? 0,
      tokens: info.typedSearchAttributes.get(WakeTokens) ?? 0,
    }))
    .filter((c) => c.reason !== 'duplicate' && c.reason !== 'skipped')
    .sort((a, b) => a.closeMs - b.closeMs);
}

const isHeld = (info: WorkflowExecutionInfo) => {
  const h = info.typedSearchAttributes.get(WakeHeld);
  return h === 'halted' || h === 'cap';
};

/**
 * The supervisor's activities and the runs' line to it. Each worker process keeps one
 * {@link SupervisorLink} per task queue (its cached memo and leases in blocks), made from the worker's
 * own client on first use; the first use also starts the supervisor if needed and brings it this
 * worker's policy.
 */
export function createSupervisorActivities(opts: { policy: SupervisorPolicy; pager: Pager }): SupervisorActivities & {
  /** The first step's verdict for a run of `agent` (activities/run/run.ts calls it in prepareRun). */
  runVerdict(taskQueue: string, agent: string): Promise<RunVerdict>;
} {
  const links = new Map<string, Promise<SupervisorLink>>();
  const linkFor = (taskQueue: string): Promise<SupervisorLink> => {
    let link = links.get(taskQueue);
    if (!link) {
      const made = new SupervisorLink({ client: getClient(), taskQueue, policy: opts.policy });
      link = made.ensure(true).then(() => made);
      link.catch(() => links.delete(taskQueue));
      links.set(taskQueue, link);
    }
    return link;
  };

  return {
    async runVerdict(taskQueue, agent) {
      return (await linkFor(taskQueue)).runVerdict(agent);
    },

    async recheckHold({ agent, hold, heldAtMs, nudged }) {
      return (await linkFor(activityInfo().taskQueue)).runVerdict(agent, { hold, heldAtMs, ...(nudged ? { nudged } : {}) });
    },

    /** Closed runs from visibility, with the terminal reason and spend each run recorded on itself. */
    async observeRuns({ taskQueue, fromMs, toMs, limit }) {
      const query = `${runsOf(taskQueue)} AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND CloseTime > ${quote(new Date(fromMs).toISOString())} AND CloseTime <= ${quote(new Date(toMs).toISOString())}`;
      const found = await listAll(getClient(), query, limit * 5);
      const closures = closuresOf(found, toMs);
      // The same round looks for coalescers terminated by hand: what they held is offered again
      // (activities/coalescer/recover.ts). Best effort: a failure is logged, the round goes on.
      await recoverTerminatedCoalescers(getClient(), taskQueue, fromMs, toMs).catch((err: unknown) =>
        log.warn('coalescer recovery failed this round', { taskQueue, err: String(err) }),
      );
      return { closures: closures.slice(0, limit), truncated: closures.length > limit || found.length >= limit * 5 };
    },

    async sendPage(page) {
      const receipt = await opts.pager.send(page);
      log.warn('supervisor paged', { dedupKey: receipt.dedupKey, status: receipt.status, summary: page.summary });
      return { dedupKey: receipt.dedupKey, status: receipt.status };
    },

    /** The kill switch for every live run (not the held ones) of the agents named and their live shadows; swept twice for runs not yet indexed. */
    async stopLiveRuns({ taskQueue, agents, who, reason }) {
      const client = getClient();
      const done = new Set<string>();
      let held = 0;
      const sweep = async () => {
        const live = (await listAll(client, `${runsOf(taskQueue)} AND ExecutionStatus = 'Running'`, 100_000)).filter(
          (info) => !isHeld(info) && !done.has(info.workflowId) && stopReaches(agents, info.typedSearchAttributes.get(WakeAgent) ?? ''),
        );
        await eachLimited(live, FAN_OUT, async (info) => {
          done.add(info.workflowId);
          // `halt`: a run that has not begun its work (visibility may not show it held yet) holds rather than ends.
          const ack = await client.workflow.getHandle(info.workflowId, info.runId).executeUpdate(killUpdate, { args: [{ who, reason, halt: true }] });
          if (ack.held) held += 1;
        });
      };
      await sweep();
      await new Promise((r) => setTimeout(r, SECOND_SWEEP_MS));
      await sweep();
      log.warn('supervisor stopped live runs', { taskQueue, agents, stopped: done.size - held, held });
      return { stopped: done.size - held, held };
    },

    /** Held runs re-check now rather than at their next timer. */
    async nudgeHeld({ taskQueue, agent }) {
      const client = getClient();
      const held = await listAll(
        client,
        `${runsOf(taskQueue)} AND ExecutionStatus = 'Running' AND WakeHeld IN ('halted', 'cap')${agent ? ` AND WakeAgent = ${quote(agent)}` : ''}`,
        100_000,
      );
      // By workflow ID: a held run that continued as new since visibility listed it gets the nudge in its current run.
      await eachLimited(held, FAN_OUT * 2, (info) => client.workflow.getHandle(info.workflowId).signal(holdNudgeSignal));
      return { nudged: held.length };
    },
  };
}
