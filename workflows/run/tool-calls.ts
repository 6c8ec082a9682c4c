import type { AgentPolicy } from '../../src/core/policy';
import type { RunInput } from '../../src/core/run-types';
import { RecordedTools, type ToolResult } from '../../src/core/recorded-tools';
import { toolCallWithin } from './proxies';
import { reserve, settle, type BudgetPool } from '../../src/core/budget';
import type { RunState } from '../../src/core/run-state';

/**
 * A tool call of the run, charged to its pool: undefined when the pool refuses it. With `budgetLeftMs`
 * (what is left of the run's wall-clock budget; it may throw when nothing is: workflows/shared/deadline.ts),
 * each call times out when the budget ends, and none is scheduled once it has.
 */
export function toolCaller(
  input: RunInput,
  policy: AgentPolicy,
  state: RunState,
  pool: BudgetPool,
  recorded: RecordedTools | undefined,
  budgetLeftMs?: () => number | undefined,
): ToolCaller {
  return async (name: string, args: Record<string, unknown> = {}) => {
    const leftMs = budgetLeftMs?.();
    const r = reserve(pool, { toolCalls: 1 });
    if (!r.ok) return undefined;
    // A shadow run with the recorded run's tool calls: a matching call is answered from them, charged as a call.
    const answered = recorded?.answer(name, args);
    if (answered) {
      settle(pool, r.charge, r.charge);
      return { ...answered, attempt: 1 };
    }
    const call = toolCallWithin(policy.tools.find((t) => t.name === name)?.timeoutMs ?? 120_000, leftMs);
    const res = await call({
      agent: policy.name,
      agentVersion: policy.version,
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

/** How the run calls a tool (toolCaller): its result and attempt, or undefined when the run's pool refuses the call. */
export type ToolCaller = (name: string, args?: Record<string, unknown>) => Promise<(ToolResult & { attempt: number }) | undefined>;

/** A shadow run given the recorded run's tool calls answers matching calls from them; counted on its state. */
export function recordedToolsOf(input: RunInput, state: RunState): RecordedTools | undefined {
  if (input.origin.kind !== 'shadow' || !input.origin.tools) return undefined;
  state.tools ??= { recorded: 0, live: 0 };
  return new RecordedTools(input.origin.tools, state.tools);
}
