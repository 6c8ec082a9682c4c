import { TimeoutType } from '@temporalio/common';
import { ActivityFailure, ChildWorkflowFailure, executeChild, isCancellation, TimeoutFailure } from '@temporalio/workflow';
import { DeadlinePassed, timeLeftMs } from '../shared/deadline';
import { workflowNow } from '../shared/clock';
import type { AgentPolicy } from '../../src/core/policy';
import type { RunInput } from '../../src/core/run-types';
import { RecordedTools } from '../../src/core/recorded-tools';
import type { SubagentResult } from './subagent';
import { reserve, settle, type BudgetPool } from '../../src/core/budget';
import { exhausted } from './model-turn';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import type { SteerInbox } from './steer';
import { converse } from './conversation';
import { recordedToolsOf, toolCaller } from './tool-calls';

/**
 * Run `work` (an agent with a model) under the wall-clock budget, without a deadline timer (a timer
 * is a billed action): every wait of the run is bounded by the deadline itself
 * (`state.deadlineMs`, workflows/shared/deadline.ts). Its activities (tool calls, model turns) time
 * out (schedule-to-close) at the deadline, a model turn's retry never sleeps past it, a subagent child
 * times out at it (execution timeout), and a wait for a person's approval waits at most until it (a
 * timer then, only while a person is awaited, as the approval's own timeout always was). A step whose
 * time is gone is not scheduled. An effect in flight is let finish, as a cancelled run lets it
 * (commit.ts), and no later effect starts. Whichever way the deadline is met, the run ends
 * `budget_exhausted` on `wallClockMs`, `finishing` the phase it was in; a kill or a supersede (a
 * cancellation) still ends it `cancelled`.
 */
async function underDeadline(state: RunState, pool: BudgetPool, nowMs: number, work: () => Promise<RunOutcome>): Promise<RunOutcome> {
  const deadlineMs = state.startedAtMs + pool.limits.wallClockMs;
  if (deadlineMs - nowMs <= 0) return exhausted('wallClockMs', 'starting');
  state.deadlineMs = deadlineMs;
  try {
    return await work();
  } catch (err) {
    // The deadline met (a step not scheduled, a wait timed out), or a step failed after it: its
    // retry refused for want of time, or an error no timer would have let happen before the run ended.
    if (!isCancellation(err) && (err instanceof DeadlinePassed || timedOut(err) || deadlineMs - workflowNow() <= 0)) {
      return exhausted('wallClockMs', `finishing "${state.phase}"`);
    }
    throw err;
  }
}

/** An activity that timed out at the deadline (schedule-to-close), or a subagent child at it (execution timeout). */
const timedOut = (err: unknown) =>
  (err instanceof ActivityFailure && scheduleToClose(err)) || (err instanceof ChildWorkflowFailure && err.cause instanceof TimeoutFailure);

/**
 * The bounded agent loop for an agent with a policy: precheck (cheap `no_op` exit), subagents (child
 * workflows granted slices of this run's pool), model turns with tool calls, then the commit stage
 * (the model's part: conversation.ts). Every expensive step is charged before it runs. Events
 * `steer`ed into the run (overlap `steer`) are given to the model as a message before its next turn;
 * a final answer given while some wait is asked again with them, and the inbox closes only where the
 * loop commits or ends on an answer.
 */
export async function runAgentLoop(
  input: RunInput,
  policy: AgentPolicy,
  state: RunState,
  pool: BudgetPool,
  nowMs: number,
  steer?: SteerInbox,
): Promise<RunOutcome> {
  const model = policy.model;
  if (!model) return runSteps(input, policy, state, pool, steer);
  return underDeadline(state, pool, nowMs, async () => {
    const observations: unknown[] = [];
    const recorded = recordedToolsOf(input, state);
    const tool = toolCaller(input, policy, state, pool, recorded, () => timeLeftMs(state.deadlineMs));

    for (const step of policy.steps ?? []) {
      state.phase = step;
      const res = await tool(step);
      if (!res) return exhausted('toolCalls', `step ${step}`);
      observations.push({ step, ...(JSON.parse(res.content) as object) });
    }

    if (policy.precheck) {
      state.phase = 'precheck';
      const res = await tool(policy.precheck);
      if (!res) return exhausted('toolCalls', 'the precheck');
      if (res.nothingToDo && !steer?.pending) {
        steer?.close(); // ends here, taking no more (steered events the precheck did not see go to the model)
        return { reason: 'no_op', summary: `nothing to do: ${res.content}`, output: { precheck: JSON.parse(res.content) as unknown } };
      }
      observations.push(JSON.parse(res.content));
    }

    if (policy.subagents) {
      state.phase = 'subagents';
      const funded = await runSubagents(input, policy, policy.subagents, model, state, pool, recorded);
      if (!Array.isArray(funded)) return funded;
      observations.push(...funded);
    }

    return converse(input, policy, model, state, pool, { observations, tool, steer });
  });
}

/**
 * A tool-only agent (the canary): its steps are its whole run, under its wall-clock budget without a
 * deadline timer (a timer is a billed action). Each step is an activity whose
 * schedule-to-close timeout is what is left of the budget, so no step, retries included, outlives it:
 * the server times it out at the deadline (the attempt running learns it at its next heartbeat, within
 * about a second, and is cancelled; tools only read) and the run ends `budget_exhausted`, as it does
 * when the budget is spent before a step. Nothing else here could outlive the budget (no model turn,
 * subagent or approval; an agent with a model bounds those by the deadline too: {@link underDeadline}).
 */
async function runSteps(input: RunInput, policy: AgentPolicy, state: RunState, pool: BudgetPool, steer?: SteerInbox): Promise<RunOutcome> {
  const deadlineMs = state.startedAtMs + pool.limits.wallClockMs;
  const left = () => deadlineMs - workflowNow();
  const tool = toolCaller(input, policy, state, pool, recordedToolsOf(input, state), left);
  const observations: unknown[] = [];
  for (const step of policy.steps ?? []) {
    if (left() <= 0) return exhausted('wallClockMs', observations.length ? `finishing "${state.phase}"` : 'starting');
    state.phase = step;
    let res;
    try {
      res = await tool(step);
    } catch (err) {
      // Timed out at the deadline; or failed after it, its retry refused for want of time.
      if (err instanceof ActivityFailure && !isCancellation(err) && (scheduleToClose(err) || left() <= 0)) {
        return exhausted('wallClockMs', `finishing "${step}"`);
      }
      throw err;
    }
    if (!res) return exhausted('toolCalls', `step ${step}`);
    observations.push({ step, ...(JSON.parse(res.content) as object) });
  }
  steer?.close(); // nothing would read steered events (defineAgent refuses `steer` without a model)
  return { reason: 'success', summary: `${policy.name} ran ${(policy.steps ?? []).join(', ')} for ${input.eventKey}`, output: { steps: observations } };
}

const scheduleToClose = (err: ActivityFailure) => err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE;

/**
 * Subagents: one child workflow per item of the payload's `over` list, each granted a slice of this
 * run's pool. The grants are reserved synchronously, before any child starts, so together they fit
 * the pool. Their observations, or the outcome when the pool could not fund them all.
 */
async function runSubagents(
  input: RunInput,
  policy: AgentPolicy,
  sub: NonNullable<AgentPolicy['subagents']>,
  model: NonNullable<AgentPolicy['model']>,
  state: RunState,
  pool: BudgetPool,
  recorded: RecordedTools | undefined,
): Promise<unknown[] | RunOutcome> {
  const items = Array.isArray(input.payload[sub.over]) ? (input.payload[sub.over] as string[]) : [];
  // The children end at the run's deadline (their execution timeout): the parent's wall clock covers them.
  const leftMs = timeLeftMs(state.deadlineMs);
  const grants = items.map((item) => ({ item, r: reserve(pool, sub.grant) }));
  const results = await Promise.all(
    grants.map(async ({ item, r }): Promise<SubagentResult> => {
      if (!r.ok) return { item, terminalReason: 'budget_exhausted', spent: { turns: 0, tokens: 0, toolCalls: 0, costUsd: 0 }, attempts: 1 };
      const res = await executeChild('subagentWorkflow', {
        workflowId: `${input.runKey}/sub/${item}`,
        ...(leftMs !== undefined ? { workflowExecutionTimeout: leftMs } : {}),
        args: [
          {
            agent: policy.name,
            runKey: input.runKey,
            wakeKey: input.wakeKey,
            entity: input.entity,
            payload: input.payload,
            item,
            tool: sub.tool,
            toolTimeoutMs: policy.tools.find((t) => t.name === sub.tool)?.timeoutMs ?? 120_000,
            grant: r.charge,
            policy: { model, systemPrompt: policy.systemPrompt, ...(policy.version ? { version: policy.version } : {}) },
            ...(recorded && input.origin.kind === 'shadow' ? { recordedTools: RecordedTools.forItem(input.origin.tools ?? [], item) } : {}),
          },
        ],
      });
      settle(pool, r.charge, res.spent);
      if (recorded && res.toolAnswers) recorded.add(res.toolAnswers);
      return res;
    }),
  );
  for (const res of results) state.maxAttempt = Math.max(state.maxAttempt, res.attempts);
  const unfunded = results.filter((r) => r.terminalReason !== 'success').map((r) => r.item);
  if (unfunded.length) {
    return {
      reason: 'budget_exhausted',
      summary: `the pool could not fund subagents for ${unfunded.join(', ')}`,
      output: { dimension: 'pool', subagents: results },
    };
  }
  return results.map((r) => r.observation);
}
