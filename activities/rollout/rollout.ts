import { getClient, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RolloutActivities } from '../../src/core/contracts';
import { supervisorId } from '../../src/core/ids';
import { killUpdate } from '../../src/core/messages';
import type { SupervisorMemo, SupervisorMode } from '../../src/core/supervisor-types';
import { listAll } from '../supervisor/supervise';
import { closedRunOf, evidenceOf, type ClosedRun } from './evidence';
import { liveShadowReport } from '../../src/shadow/report';

/** Closed runs read for one piece of evidence at most: the figures are of the first ones listed past it. */
const EVIDENCE_BOUND = 10_000;
/** Runs asked to stop at once. */
const FAN_OUT = 16;
/** A run that started just before the stop may not be in visibility yet: a second sweep this much later finds it. */
const SECOND_SWEEP_MS = 2000;

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const runsOf = (taskQueue: string, agent: string) => `WorkflowType = 'runWorkflow' AND TaskQueue = ${quote(taskQueue)} AND WakeAgent = ${quote(agent)}`;

/** Live shadows diffed for one piece of evidence at most (each is two histories read). */
const SHADOWS_READ = 200;

/**
 * The share of the agent's live shadows (its `shadow` option) closed since `sinceMs` whose run
 * differs from the real run it shadows (effects, terminal reason or answer), the newest
 * {@link SHADOWS_READ} of them; undefined when none closed.
 */
async function shadowDiffSince(client: Client, agent: string, sinceMs: number): Promise<number | undefined> {
  const { wakes } = await liveShadowReport(client, { agent, since: new Date(sinceMs), limit: SHADOWS_READ });
  if (!wakes.length) return undefined;
  return wakes.filter((w) => w.effects.length > 0 || w.terminalReason.changed || w.answer.changed).length / wakes.length;
}

/** The supervisor's mode, from its memo (answered without a worker); no supervisor yet: armed. */
async function modeOf(client: Client, taskQueue: string): Promise<SupervisorMode> {
  try {
    const desc = await client.workflow.getHandle(supervisorId(taskQueue)).describe();
    return (desc.memo?.supervisor as SupervisorMemo | undefined)?.mode ?? 'armed';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'armed';
    throw err;
  }
}

/**
 * The rollout's activities: its evidence (closed runs per version, from the search attributes each
 * run recorded on itself), the supervisor's mode, and the stop of a version's runs in flight.
 * Visibility failures are retried by the workflow's retry policy; a server with no visibility API
 * fails `VisibilityUnavailable`, non-retryable.
 */
export function createRolloutActivities(): RolloutActivities {
  return {
    async rolloutEvidence({ taskQueue, agent, current, candidate, sinceMs, shadowDiff }) {
      const client = getClient();
      const query = `${runsOf(taskQueue, agent)} AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND CloseTime >= ${quote(new Date(sinceMs).toISOString())}`;
      const [found, fleet, diff] = await Promise.all([
        listAll(client, query, EVIDENCE_BOUND),
        modeOf(client, taskQueue),
        shadowDiff ? shadowDiffSince(client, agent, sinceMs) : undefined,
      ]);
      const runs = found.map((info) => closedRunOf(info, current)).filter((r): r is ClosedRun => r !== undefined);
      const figures = evidenceOf(runs, current, candidate);
      return {
        sinceMs,
        current: figures.current,
        candidate: { ...figures.candidate, ...(diff !== undefined ? { shadowDiff: diff } : {}) },
        fleet,
        truncated: found.length >= EVIDENCE_BOUND,
      };
    },

    async fleetMode({ taskQueue }) {
      return modeOf(getClient(), taskQueue);
    },

    /** Every running run of the agent is sent `kill` naming the version: only those pinned to it stop. */
    async stopVersionRuns({ taskQueue, agent, version, who, reason }) {
      const client = getClient();
      const asked = new Set<string>();
      let stopped = 0;
      const sweep = async () => {
        const live = (await listAll(client, `${runsOf(taskQueue, agent)} AND ExecutionStatus = 'Running'`, 100_000)).filter((i) => !asked.has(i.workflowId));
        let next = 0;
        const one = async (workflowId: string, runId: string) => {
          asked.add(workflowId);
          const ack = await client.workflow.getHandle(workflowId, runId).executeUpdate(killUpdate, { args: [{ who, reason, version }] });
          // A run on another version answers accepted=false (the run side of agent versions).
          if ((ack as { accepted: boolean }).accepted) stopped += 1;
        };
        await Promise.all(
          Array.from({ length: Math.min(FAN_OUT, live.length) }, async () => {
            while (next < live.length) {
              const info = live[next++]!;
              // A run that ended meanwhile, or refused the kill, is not stopped: nothing to do.
              await one(info.workflowId, info.runId).catch(() => undefined);
            }
          }),
        );
      };
      await sweep();
      await new Promise((r) => setTimeout(r, SECOND_SWEEP_MS));
      await sweep();
      log.warn('rollout stopped runs of a version', { taskQueue, agent, version, asked: asked.size, stopped });
      return { asked: asked.size, stopped };
    },
  };
}
