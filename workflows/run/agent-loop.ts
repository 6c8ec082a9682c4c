import { CancellationScope, executeChild, isCancellation, sleep } from '@temporalio/workflow';
import type { AgentPolicy, BudgetDimension } from '../../src/core/policy';
import {
  EFFECT_TOOL_MARK,
  type ChatMessage,
  type FinalDecision,
  type ModelTool,
  type Proposal,
  type RunContext,
  type UnparsedFinal,
} from '../../src/core/contracts';
import type { RunInput } from '../../src/core/run-types';
import { RecordedTools } from '../../src/core/recorded-tools';
import type { SubagentResult } from './subagent';
import { toolCallWithin } from './proxies';
import { reserve, settle, type BudgetPool } from '../../src/core/budget';
import { commitEffects } from '../commit/commit';
import { chargedModelCall, correctiveMessages, MAX_CORRECTIVE_TURNS, unparseableOutcome, unusableFinal } from './model-turn';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import type { SteerInbox } from './steer';

/**
 * Overlap `steer`: how many times a final answer is asked again because steered events came during
 * its turn. Past it (events arriving faster than a model turn) the run commits the answer it has,
 * and the events still waiting go to the follow-up run: a run always gets to commit.
 */
export const MAX_STEER_REASKS = 2;

export const exhausted = (dimension: BudgetDimension, detail: string, more: Record<string, unknown> = {}): RunOutcome => ({
  reason: 'budget_exhausted',
  summary: `stopped before ${detail}: the ${dimension} budget would be crossed`,
  output: { dimension, ...more },
});

/**
 * Run `work` under the wall-clock budget: a timer for what is left of it cancels the work (and any
 * activity or child in flight) when it fires, and the run ends `budget_exhausted`.
 */
async function underDeadline(state: RunState, pool: BudgetPool, nowMs: number, work: () => Promise<RunOutcome>): Promise<RunOutcome> {
  const remaining = pool.limits.wallClockMs - (nowMs - state.startedAtMs);
  if (remaining <= 0) return exhausted('wallClockMs', 'starting');
  let timedOut = false;
  const scope = new CancellationScope();
  sleep(remaining).then(
    () => {
      timedOut = true;
      scope.cancel();
    },
    () => undefined, // the run itself was cancelled (kill): nothing to do
  );
  try {
    return await scope.run(work);
  } catch (err) {
    // The step in flight is waited for; one whose worker is gone ends in a timeout, not a cancellation.
    if (timedOut && (isCancellation(err) || scope.consideredCancelled)) return exhausted('wallClockMs', `finishing "${state.phase}"`);
    throw err;
  }
}

/**
 * The bounded agent loop for an agent with a policy: precheck (cheap `no_op` exit), subagents (child
 * workflows granted slices of this run's pool), model turns with tool calls, then the commit stage.
 * Every expensive step is charged before it runs. Events `steer`ed into the run (overlap `steer`) are
 * given to the model as a message before its next turn; a final answer given while some wait is
 * asked again with them, and the inbox closes only where the loop commits or ends on an answer.
 */
export async function runAgentLoop(
  input: RunInput,
  policy: AgentPolicy,
  state: RunState,
  pool: BudgetPool,
  nowMs: number,
  steer?: SteerInbox,
): Promise<RunOutcome> {
  return underDeadline(state, pool, nowMs, async () => {
    const observations: unknown[] = [];
    const recorded = recordedToolsOf(input, state);
    const tool = toolCaller(input, policy, state, pool, recorded);

    for (const step of policy.steps ?? []) {
      state.phase = step;
      const res = await tool(step);
      if (!res) return exhausted('toolCalls', `step ${step}`);
      observations.push({ step, ...(JSON.parse(res.content) as object) });
    }
    const model = policy.model;
    if (!model) {
      steer?.close(); // nothing would read steered events (defineAgent refuses `steer` without a model)
      // A tool-only agent (the canary): its steps are its whole run.
      return { reason: 'success', summary: `${policy.name} ran ${(policy.steps ?? []).join(', ')} for ${input.eventKey}`, output: { steps: observations } };
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

    state.phase = 'thinking';
    // Tools are offered with their arguments' schemas; effects too when the model proposes them (the
    // loop stages them; only the commit stage carries them out).
    const offered: ModelTool[] = [
      ...policy.tools
        .filter((t) => t.name !== policy.precheck && t.name !== policy.subagents?.tool)
        .map(({ name, description, parameters }) => ({ name, description, parameters })),
      ...(policy.proposedBy === 'model'
        ? policy.effects.map(({ name, description, parameters, reversible }) => ({
            name,
            description: `${EFFECT_TOOL_MARK} ${description}${reversible ? '' : ' (irreversible: a person approves it)'}. Proposing stages it; it is carried out only after your final answer.`,
            parameters,
          }))
        : []),
    ];
    const run: RunContext = { runKey: input.runKey, wakeKey: input.wakeKey, entity: input.entity, eventKey: input.eventKey, payload: input.payload };
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: `${policy.systemPrompt}\n\nWhen you are done, answer with exactly one JSON object matching this JSON Schema: ${JSON.stringify(policy.answerSchema)}`,
      },
      {
        role: 'user',
        content: JSON.stringify({
          task: policy.description,
          event: { key: input.eventKey, type: input.type, entity: input.entity, payload: input.payload },
          observations,
        }),
      },
    ];
    const staged: Proposal[] = [];
    const unparsed: UnparsedFinal[] = [];
    const commit = (final: FinalDecision): Promise<RunOutcome> | RunOutcome => {
      steer?.close(); // what still waits is the follow-up run's (steer.ts)
      const { answer, summary, noOp, effects } = final;
      if (noOp !== undefined) return { reason: 'no_op', summary: `nothing to do: ${noOp}`, output: { answer, ...(staged.length ? { dropped: staged } : {}) } };
      const proposals = [...staged, ...effects];
      if (!proposals.length) return { reason: 'no_op', summary: `nothing to do: no effect was proposed (${summary})`, output: { answer } };
      state.phase = 'committing';
      return commitEffects(input, policy, state, pool, { answer, summary, proposals });
    };
    /** A final answer asked again because steered events came during its turn (and how often so far). */
    let reasked: FinalDecision | undefined;
    let reasks = 0;
    for (;;) {
      messages.push(...(steer?.drain() ?? []));
      const turn = await chargedModelCall(state, pool, { model }, { agent: policy.name, messages, tools: offered, answer: 'agent', run });
      // The budget refused the turn that would have shown the model steered events: the answer it gave
      // before them stands, and they go to the follow-up run (never dropped with the answer's effects).
      if (turn.exhausted && reasked) return commit(reasked);
      if (turn.exhausted) {
        const retry = turn.failedAttempts ? `retrying a failed model call (${turn.failedAttempts} failed attempt(s) charged)` : 'the next model turn';
        return exhausted(turn.exhausted, retry, {
          ...(turn.failedAttempts ? { failedModelAttempts: turn.failedAttempts } : {}),
          ...(unparsed.length ? { unparsedReplies: unparsed } : {}),
          ...(staged.length ? { staged } : {}),
        });
      }
      const { reply } = turn;
      steer?.confirm(); // the model was given the steered events drained for this turn
      reasked = undefined;
      // Fail closed: an answer that does not parse against the agent's schema is never read as a
      // decision. It gets one corrective turn (charged like any turn); still unusable, the run escalates.
      const bad = unusableFinal(reply);
      if (bad) {
        unparsed.push(bad);
        if (unparsed.length > MAX_CORRECTIVE_TURNS) return unparseableOutcome(unparsed);
        messages.push(...correctiveMessages(bad, policy.answerSchema));
        continue;
      }
      if (reply.final) {
        // Steered events came during this turn: ask again with them, up to MAX_STEER_REASKS times.
        // Check and close are one synchronous step (steer.ts).
        if (steer?.pending && reasks < MAX_STEER_REASKS) {
          reasks += 1;
          reasked = reply.final;
          messages.push({ role: 'assistant', content: JSON.stringify(reply.final.answer) });
          continue;
        }
        return commit(reply.final);
      }
      messages.push({ role: 'assistant', content: '', toolCalls: reply.toolCalls.map(({ id, name, args }) => ({ id, name, args })) });
      for (const call of reply.toolCalls) {
        // A call the agent cannot take (unknown name, arguments that do not parse) goes back to the
        // model as the call's answer: the next turn, charged like any, lets it correct itself.
        if (call.error) {
          messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify({ error: call.error }) });
          continue;
        }
        if (call.proposes) {
          staged.push({ effect: call.name, args: call.args });
          messages.push({
            role: 'tool',
            toolCallId: call.id,
            content: JSON.stringify({ staged: staged.length, effect: call.name, note: 'carried out after your final answer' }),
          });
          continue;
        }
        const res = await tool(call.name, call.args);
        if (!res) return exhausted('toolCalls', `tool ${call.name}`, staged.length ? { staged } : {});
        messages.push({ role: 'tool', toolCallId: call.id, content: res.content });
      }
    }
  });
}

/** A tool call of the run, charged to its pool: undefined when the pool refuses it. */
function toolCaller(input: RunInput, policy: AgentPolicy, state: RunState, pool: BudgetPool, recorded: RecordedTools | undefined) {
  return async (name: string, args: Record<string, unknown> = {}) => {
    const r = reserve(pool, { toolCalls: 1 });
    if (!r.ok) return undefined;
    // A shadow run with the recorded run's tool calls: a matching call is answered from them, charged as a call.
    const answered = recorded?.answer(name, args);
    if (answered) {
      settle(pool, r.charge, r.charge);
      return { ...answered, attempt: 1 };
    }
    const call = toolCallWithin(policy.tools.find((t) => t.name === name)?.timeoutMs ?? 120_000);
    const res = await call({
      agent: policy.name,
      tool: name,
      runKey: input.runKey,
      wakeKey: input.wakeKey,
      entity: input.entity,
      payload: input.payload,
      args,
    });
    settle(pool, r.charge, r.charge);
    state.maxAttempt = Math.max(state.maxAttempt, res.attempt);
    return res;
  };
}

/** A shadow run given the recorded run's tool calls answers matching calls from them; counted on its state. */
function recordedToolsOf(input: RunInput, state: RunState): RecordedTools | undefined {
  if (input.origin.kind !== 'shadow' || !input.origin.tools) return undefined;
  state.tools ??= { recorded: 0, live: 0 };
  return new RecordedTools(input.origin.tools, state.tools);
}

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
  const grants = items.map((item) => ({ item, r: reserve(pool, sub.grant) }));
  const results = await Promise.all(
    grants.map(async ({ item, r }): Promise<SubagentResult> => {
      if (!r.ok) return { item, terminalReason: 'budget_exhausted', spent: { turns: 0, tokens: 0, toolCalls: 0, costUsd: 0 }, attempts: 1 };
      const res = await executeChild('subagentWorkflow', {
        workflowId: `${input.runKey}/sub/${item}`,
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
            policy: { model, systemPrompt: policy.systemPrompt },
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
