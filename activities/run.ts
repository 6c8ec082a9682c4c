import { activityInfo, getClient, heartbeat, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentRegistry } from '../agents/registry';
import type { OutsideConfig } from '../config/config';
import { withHeartbeat } from './heartbeat';
import type { RunActivities } from '../workflows/contracts';
import type { RunVerdict } from '../workflows/supervisor-types';
import { FailureType } from '../workflows/failures';
import type { Model } from './model/types';
import { windowTaken } from './schedule';

/** The agent named, or a non-retryable UnknownAgent failure naming it. */
export function agentOf(agents: AgentRegistry, name: string) {
  const def = agents[name];
  if (!def) throw ApplicationFailure.nonRetryable(`no agent named "${name}" is defined in this worker`, FailureType.UnknownAgent);
  return def;
}

/** The run's activities: the agent's policy and payload, the model, the agent's tools. */
export function createRunActivities(opts: {
  agents: AgentRegistry;
  model: Model;
  outside: OutsideConfig;
  /** The supervisor's word on a run about to start (activities/supervisor.ts). */
  runVerdict: (taskQueue: string, agent: string) => Promise<RunVerdict>;
}): RunActivities {
  const { agents, model, outside } = opts;
  return {
    /**
     * The named agent's policy (plain JSON, so the workflow gets it through history) and the payload
     * the run works on, merged by the agent's own `mergePayload` from every event the run absorbed
     * (one on the one-call path), and the supervisor's verdict: run, or hold (the breaker is open, or
     * a rolling cap is full; the run re-checks at its first step, whatever the gate read). Unknown
     * agent → non-retryable. A schedule's window that its Schedule started directly asks first
     * whether an earlier run already took the window (a manual trigger or a backfill of a window that
     * ran): then there is no verdict and no permit, and the run ends `duplicate`.
     */
    async prepareRun({ agent, payloads, withoutVerdict, window }) {
      const def = agentOf(agents, agent);
      const base = { policy: def.policy, payload: def.mergePayload(payloads.map((payload) => ({ payload }))) };
      const taken = window ? await windowTaken(getClient(), window) : undefined;
      if (taken) return { ...base, taken };
      const verdict = withoutVerdict ? undefined : await opts.runVerdict(activityInfo().taskQueue, agent);
      return { ...base, ...(verdict ? { verdict } : {}) };
    },

    /** One model turn. Heartbeats while it waits, so a kill cancels it mid-call. Returns the reply with honest usage. */
    async modelCall(req) {
      const reply = await withHeartbeat((signal) => model.complete(req, signal));
      const { attempt } = activityInfo();
      log.info('model call', { model: reply.model, attempt, ...reply.usage, toolCalls: reply.toolCalls.length });
      return { ...reply, attempt };
    },

    /**
     * One call of one of the agent's tools (its own code, from its definition): reads only, never an
     * effect. Heartbeats every second with the tool's last recorded progress, which a retry receives
     * as `resumeFrom`; cancellation (kill, wall clock, shutdown) aborts it through the signal.
     */
    async toolCall(input) {
      const info = activityInfo();
      const tool = agentOf(agents, input.agent).tools[input.tool];
      if (!tool) throw ApplicationFailure.nonRetryable(`agent "${input.agent}" has no tool named "${input.tool}"`, FailureType.UnknownTool);
      let progress: unknown = info.heartbeatDetails;
      const result = await withHeartbeat(
        (signal) =>
          tool.run({
            input,
            outside,
            signal,
            attempt: info.attempt,
            resumeFrom: info.heartbeatDetails,
            progress: (details) => {
              progress = details;
              heartbeat(details);
            },
          }),
        () => progress,
      );
      return { ...result, attempt: info.attempt };
    },
  };
}
