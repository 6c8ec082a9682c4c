import { ApplicationFailure, Context, activityInfo, getClient, log } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { SupervisorLinks } from '../../src/supervisor/links';
import type { Pager } from '../../src/supervisor/pager';
import type { SupervisorActivities } from '../../src/core/contracts';
import { holdNudgeSignal } from '../../src/core/supervisor-messages';
import { killUpdate } from '../../src/core/messages';
import { WakeAgent, WakeCostUsd, WakeHeld, WakeTerminalReason, WakeTokens } from '../../src/core/search-attributes';
import { recoverTerminatedCoalescers } from '../coalescer/recover';
import { stopReaches } from '../../src/core/shadow';
import type { RunClosure, RunObservation, SupervisorMemo } from '../../src/core/supervisor-types';
import { supervisorId } from '../../src/core/ids';
import type { WatchRequest } from '../../src/core/supervisor-requests';
import { watchCut } from '../../src/core/supervisor-watch';

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

/** How many workflows the query counts; `VisibilityUnavailable` (benign) on a server with no visibility API. */
async function countAll(client: Pick<Client, 'workflow'>, query: string): Promise<number> {
  try {
    return (await client.workflow.count(query)).count;
  } catch (err) {
    if ((err as { cause?: { code?: number } }).cause?.code === UNIMPLEMENTED || (err as { code?: number }).code === UNIMPLEMENTED)
      throw visibilityUnavailable();
    throw err;
  }
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

/** Runs closed in (fromMs, toMs], at most `limit`; the same read looks for coalescers terminated by hand. */
async function readClosed(client: Client, taskQueue: string, fromMs: number, toMs: number, limit: number): Promise<RunObservation> {
  const query = `${runsOf(taskQueue)} AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND CloseTime > ${quote(new Date(fromMs).toISOString())} AND CloseTime <= ${quote(new Date(toMs).toISOString())}`;
  const found = await listAll(client, query, limit * 5);
  const closures = closuresOf(found, toMs);
  // The same round looks for coalescers terminated by hand: what they held is offered again
  // (activities/coalescer/recover.ts). Best effort: a failure is logged, the round goes on.
  await recoverTerminatedCoalescers(client, taskQueue, fromMs, toMs).catch((err: unknown) =>
    log.warn('coalescer recovery failed this round', { taskQueue, err: String(err) }),
  );
  return { closures: closures.slice(0, limit), truncated: closures.length > limit || found.length >= limit * 5 };
}

/** Closed runs are read up to this far behind now: a run closed in the last moment may not be listed yet. */
const SETTLE_MS = 1000;

/**
 * One watch of a burst (WatchRequest): read the runs that closed every `everyMs`, and count the runs
 * open on the task queue (held ones too), until
 * - no run is open, none started or closed for `quietMs`, and no leased block may still start one
 *   (`quietUntilMs`): the burst is over (`settled`); every run closed by the first count of none
 *   open, and reads run up to at least that count;
 * - none started or closed for `activeMs` though some are open (held, awaiting a person): `settled`;
 * - what was read would change the supervisor's decision (`watchCut`: a failure that could trip the
 *   error rate, spend that fills a cap), or `limit` closures were read: `cut`;
 * - `maxMs` passed: `cut` (`bound`), and the supervisor watches on at once.
 * Every visibility call is free of Temporal Cloud actions; the activity is one, however long. No heartbeat
 * (each would be an action): a worker lost mid-watch is found by the activity's start-to-close timeout.
 */
async function watchRuns(client: Client, taskQueue: string, fromMs: number, limit: number, w: WatchRequest): Promise<RunObservation> {
  const ctx = Context.current();
  const startMs = Date.now();
  const closures: RunClosure[] = [];
  let toMs = fromMs;
  let open = -1;
  let openAtMs = 0;
  /** The first count of none open since a run was last open: every run had closed by then. */
  let noneOpenAtMs = Infinity;
  let changedAtMs = startMs;
  const answer = (extra: Partial<RunObservation>, truncated = false): RunObservation => ({
    closures,
    truncated,
    toMs,
    coveredToMs: Math.max(fromMs, openAtMs - SETTLE_MS),
    ...extra,
  });
  for (;;) {
    const nowMs = Date.now();
    const readTo = nowMs - SETTLE_MS;
    // The first read is made whatever its span: a server without visibility says so at once.
    if (readTo > toMs || open < 0) {
      const read = await readClosed(client, taskQueue, toMs, Math.max(toMs, readTo), limit - closures.length);
      closures.push(...read.closures);
      if (read.closures.length) changedAtMs = nowMs;
      if (read.truncated && read.closures.length) {
        toMs = read.closures[read.closures.length - 1]!.closeMs;
        return answer({ cut: 'limit' }, true);
      }
      toMs = Math.max(toMs, readTo);
    }
    const cut = watchCut(w, closures);
    if (cut) return answer({ cut });
    if (closures.length >= limit) return answer({ cut: 'limit' }, true);
    // Every run had closed by the first count of none open, and what closed up to it has been read.
    const quiet = nowMs - changedAtMs;
    // A block leased since the watch began may start runs until its hold ends: the supervisor's memo says until when.
    const quietUntilMs = Math.max(w.quietUntilMs, await leasedUntilMs(client, taskQueue));
    if (open === 0 && toMs >= noneOpenAtMs && quiet >= w.quietMs && nowMs >= quietUntilMs) return answer({ settled: true });
    if (open > 0 && quiet >= w.activeMs && nowMs >= quietUntilMs) return answer({ settled: true });
    if (nowMs - startMs >= w.maxMs) return answer({ cut: 'bound' });
    const counted = await countAll(client, `${runsOf(taskQueue)} AND ExecutionStatus = 'Running'`);
    if (open >= 0 && counted !== open) changedAtMs = Date.now();
    open = counted;
    openAtMs = Date.now();
    if (counted > 0) noneOpenAtMs = Infinity;
    else if (noneOpenAtMs === Infinity) noneOpenAtMs = openAtMs;
    // Cancelled (the worker shutting down): Context.sleep throws, and the activity ends.
    await ctx.sleep(w.everyMs);
  }
}

/** The supervisor's memo's `leasedUntilMs` (a describe: no billable action), 0 when it cannot be read. */
async function leasedUntilMs(client: Client, taskQueue: string): Promise<number> {
  const desc = await client.workflow
    .getHandle(supervisorId(taskQueue))
    .describe()
    .catch(() => undefined);
  return (desc?.memo?.supervisor as SupervisorMemo | undefined)?.leasedUntilMs ?? 0;
}

const isHeld = (info: WorkflowExecutionInfo) => {
  const h = info.typedSearchAttributes.get(WakeHeld);
  return h === 'halted' || h === 'cap';
};

/**
 * The supervisor's activities: a held run's re-check (through this process's {@link SupervisorLinks}),
 * the observer's read of closed runs, the pager, the kill switch's sweep and the nudge of held runs.
 */
export function createSupervisorActivities(opts: { links: SupervisorLinks; pager: Pager }): SupervisorActivities {
  return {
    async recheckHold({ agent, hold, heldAtMs, nudged }) {
      return opts.links.runVerdict(activityInfo().taskQueue, agent, { hold, heldAtMs, ...(nudged ? { nudged } : {}) });
    },

    /**
     * Closed runs from visibility, with the terminal reason and spend each run recorded on itself: one
     * read, or (`watch`) reads every `everyMs` in this one activity until the burst is over (watch below).
     */
    async observeRuns({ taskQueue, fromMs, toMs, limit, watch }) {
      if (!watch) return readClosed(getClient(), taskQueue, fromMs, toMs ?? Date.now() - SETTLE_MS, limit);
      return watchRuns(getClient(), taskQueue, fromMs, limit, watch);
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
