import { CancellationScope, executeChild, isCancellation, sleep } from '@temporalio/workflow';
import type { AgentPolicy, BudgetDimension } from '../../agents/policy';
import type { ChatMessage, ModelRequest } from '../../activities/model/types';
import type { WakeInput } from '../types';
import type { SubagentResult } from '../subagent';
import { modelCall, toolCallWithin } from './activities';
import { costUsd, left, reserve, settle, utf8Bytes, type BudgetPool } from './budget';
import { commitEffects } from './commit';
import type { RunOutcome, RunState } from './state';

/** Worst-case tokens of a request: bytes bound the input under byte-level BPE; the reply is capped by max tokens. */
export function inputTokenBound(messages: ChatMessage[], tools: ModelRequest['tools']): number {
  const PER_MESSAGE = 8; // chat framing; generous against every provider's documented overhead
  let n = 3 + (tools.length ? utf8Bytes(JSON.stringify(tools)) : 0);
  for (const m of messages) n += PER_MESSAGE + utf8Bytes(m.content) + (m.toolCalls ? utf8Bytes(JSON.stringify(m.toolCalls)) : 0);
  return n;
}

export const exhausted = (dimension: BudgetDimension, detail: string): RunOutcome => ({
  reason: 'budget_exhausted',
  summary: `stopped before ${detail}: the ${dimension} budget would be crossed`,
  output: { dimension },
});

/**
 * One model turn, charged before it runs: the reservation is the request's worst case (input bound
 * plus the reply cap, and their cost); after the call it is settled to the usage the model reports.
 * Returns the reply, or the dimension that would have been crossed.
 */
export async function chargedModelCall(
  state: RunState,
  pool: BudgetPool,
  policy: { model: NonNullable<AgentPolicy['model']> },
  messages: ChatMessage[],
  tools: ModelRequest['tools'],
) {
  const input = inputTokenBound(messages, tools);
  const maxOutputTokens = Math.min(policy.model.maxOutputTokens, left(pool, 'tokens') - input);
  if (maxOutputTokens < 16) return { exhausted: 'tokens' as const };
  const r = reserve(pool, { turns: 1, tokens: input + maxOutputTokens, costUsd: costUsd(input, maxOutputTokens, policy.model) });
  if (!r.ok) return { exhausted: r.dimension };
  let reply: Awaited<ReturnType<typeof modelCall>>;
  try {
    reply = await modelCall({ messages, tools, maxOutputTokens });
  } catch (err) {
    // A failed or cancelled call may still have been billed: keep the worst case charged.
    settle(pool, r.charge, r.charge);
    throw err;
  }
  const { inputTokens, outputTokens } = reply.usage;
  settle(pool, r.charge, { turns: 1, tokens: inputTokens + outputTokens, costUsd: costUsd(inputTokens, outputTokens, policy.model) });
  state.maxAttempt = Math.max(state.maxAttempt, reply.attempt);
  return { reply };
}

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
    if (timedOut && isCancellation(err)) return exhausted('wallClockMs', `finishing "${state.phase}"`);
    throw err;
  }
}

/**
 * The bounded agent loop for an agent with a policy: precheck (cheap `no_op` exit), subagents (child
 * workflows granted slices of this run's pool), model turns with tool calls, then the commit stage.
 * Every expensive step is charged before it runs.
 */
export async function runAgentLoop(input: WakeInput, policy: AgentPolicy, state: RunState, pool: BudgetPool, nowMs: number): Promise<RunOutcome> {
  return underDeadline(state, pool, nowMs, async () => {
    const observations: unknown[] = [];
    const tool = async (name: string, item?: string) => {
      const r = reserve(pool, { toolCalls: 1 });
      if (!r.ok) return undefined;
      const call = toolCallWithin(policy.tools.find((t) => t.name === name)?.timeoutMs ?? 120_000);
      const res = await call({ agent: policy.name, tool: name, runKey: input.runKey, wakeKey: input.wakeKey, entity: input.entity, payload: input.payload, item });
      settle(pool, r.charge, r.charge);
      state.maxAttempt = Math.max(state.maxAttempt, res.attempt);
      return res;
    };

    for (const step of policy.steps ?? []) {
      state.phase = step;
      const res = await tool(step);
      if (!res) return exhausted('toolCalls', `step ${step}`);
      observations.push({ step, ...(JSON.parse(res.content) as object) });
    }
    const model = policy.model;
    if (!model) {
      // A tool-only agent (the canary): its steps are its whole run.
      return { reason: 'success', summary: `${policy.name} ran ${(policy.steps ?? []).join(', ')} for ${input.eventKey}`, output: { steps: observations } };
    }

    if (policy.precheck) {
      state.phase = 'precheck';
      const res = await tool(policy.precheck);
      if (!res) return exhausted('toolCalls', 'the precheck');
      if (res.nothingToDo) return { reason: 'no_op', summary: `nothing to do: ${res.content}`, output: { precheck: JSON.parse(res.content) as unknown } };
      observations.push(JSON.parse(res.content));
    }

    if (policy.subagents) {
      state.phase = 'subagents';
      const sub = policy.subagents;
      const items = Array.isArray(input.payload[sub.over]) ? (input.payload[sub.over] as string[]) : [];
      // Grants are reserved synchronously, before any child starts: all of them together fit the pool.
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
              },
            ],
          });
          settle(pool, r.charge, res.spent);
          return res;
        }),
      );
      for (const res of results) state.maxAttempt = Math.max(state.maxAttempt, res.attempts);
      const unfunded = results.filter((r) => r.terminalReason !== 'success').map((r) => r.item);
      if (unfunded.length) {
        return { reason: 'budget_exhausted', summary: `the pool could not fund subagents for ${unfunded.join(', ')}`, output: { dimension: 'pool', subagents: results } };
      }
      observations.push(...results.map((r) => r.observation));
    }

    state.phase = 'thinking';
    const offered = policy.tools.filter((t) => t.name !== policy.precheck && t.name !== policy.subagents?.tool).map(({ name, description }) => ({ name, description }));
    const messages: ChatMessage[] = [
      { role: 'system', content: policy.systemPrompt },
      { role: 'user', content: JSON.stringify({ task: policy.description, event: { key: input.eventKey, type: input.type, entity: input.entity }, observations }) },
    ];
    for (;;) {
      const turn = await chargedModelCall(state, pool, { model }, messages, offered);
      if ('exhausted' in turn) return exhausted(turn.exhausted!, 'the next model turn');
      const { reply } = turn;
      if (reply.final) {
        if (reply.final.decision === 'no_op') return { reason: 'no_op', summary: `nothing to do: ${reply.final.summary}`, output: { final: reply.final } };
        state.phase = 'committing';
        return commitEffects(input, policy, state, pool, reply.final);
      }
      messages.push({ role: 'assistant', content: '', toolCalls: reply.toolCalls });
      for (const call of reply.toolCalls) {
        const res = await tool(call.name);
        if (!res) return exhausted('toolCalls', `tool ${call.name}`);
        messages.push({ role: 'tool', toolCallId: call.id, content: res.content });
      }
    }
  });
}
