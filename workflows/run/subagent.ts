import { workflowInfo } from '@temporalio/workflow';
import type { AgentPolicy } from '../../src/core/policy';
import type { ChatMessage } from '../../src/core/contracts';
import { toolCallWithin } from './proxies';
import { chargedModelTurn } from './model-turn';
import { newPool, reserve, settle, type Spend } from '../../src/core/budget';
import { newRunState } from '../../src/core/run-state';
import type { TerminalReason } from '../../src/core/run-types';
import { RecordedTools, type RecordedToolCall, type ToolAnswers } from '../../src/core/recorded-tools';

export interface SubagentInput {
  agent: string;
  /** The parent run's key. */
  runKey: string;
  wakeKey: string;
  entity: string;
  payload: Record<string, unknown>;
  /** What this subagent works on (one dashboard). */
  item: string;
  tool: string;
  toolTimeoutMs: number;
  /** Its slice of the parent's pool, reserved there before this child started. */
  grant: Spend;
  /** The parent's model, prompt and the version it is pinned to. */
  policy: { model: NonNullable<AgentPolicy['model']>; systemPrompt: string; version?: string };
  /** A shadow run's subagent (`--tools recorded`): the recorded subagent's call for this item, answered from instead of made. */
  recordedTools?: RecordedToolCall[];
}

export interface SubagentResult {
  item: string;
  terminalReason: TerminalReason;
  /** What it actually spent; the parent settles its grant to this. Never more than the grant. */
  spent: Spend;
  attempts: number;
  observation?: { item: string; changed: boolean; headline: string };
  /** Given recorded calls: how its call was answered. */
  toolAnswers?: ToolAnswers;
}

/**
 * A subagent: reads one item with its tool and summarizes it in one model turn, spending only its
 * grant. A child workflow of the wake: cancelled with it (kill), timed out at its deadline (the
 * parent gives it an execution timeout of what is left of its wall-clock budget).
 */
export async function subagentWorkflow(input: SubagentInput): Promise<SubagentResult> {
  // The parent's wall clock covers the child (its execution timeout); the child counts only counters.
  const pool = newPool({ ...input.grant, wallClockMs: Number.MAX_SAFE_INTEGER });
  const state = newRunState(workflowInfo().runStartTime.getTime());
  const recorded = input.recordedTools ? new RecordedTools(input.recordedTools) : undefined;
  const done = (terminalReason: TerminalReason, observation?: SubagentResult['observation']): SubagentResult => ({
    item: input.item,
    terminalReason,
    spent: pool.spent,
    attempts: state.maxAttempt,
    observation,
    ...(recorded ? { toolAnswers: recorded.counts } : {}),
  });
  const r = reserve(pool, { toolCalls: 1 });
  if (!r.ok) return done('budget_exhausted');
  const fromRecord = recorded?.answer(input.tool, {}, input.item);
  const read = fromRecord
    ? { ...fromRecord, attempt: 1 }
    : await toolCallWithin(input.toolTimeoutMs)({
        agent: input.agent,
        agentVersion: input.policy.version,
        tool: input.tool,
        runKey: input.runKey,
        wakeKey: input.wakeKey,
        entity: input.entity,
        payload: input.payload,
        args: {},
        item: input.item,
      });
  settle(pool, r.charge, r.charge);
  state.maxAttempt = Math.max(state.maxAttempt, read.attempt);
  const messages: ChatMessage[] = [
    { role: 'system', content: `${input.policy.systemPrompt}\n\nAnswer with exactly one JSON object: {"conclusion":"commit"|"no_op","summary":"<one line>"}` },
    { role: 'user', content: JSON.stringify({ task: `summarize ${input.item}`, observations: [JSON.parse(read.content)] }) },
  ];
  const turn = await chargedModelTurn(state, pool, input.policy, {
    agent: input.agent,
    agentVersion: input.policy.version,
    messages,
    tools: [],
    answer: 'summary',
  });
  if (turn.exhausted) return done('budget_exhausted');
  // Fail closed: an unparseable answer is not passed on as the observation's headline.
  const summary = turn.reply.final?.summary ?? `${input.item}: changed (the model's summary could not be parsed)`;
  return done('success', { item: input.item, changed: read.changed, headline: read.changed ? summary : `${input.item}: unchanged` });
}
