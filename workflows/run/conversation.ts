import type { AgentPolicy } from '../../src/core/policy';
import {
  EFFECT_TOOL_MARK,
  type ChatMessage,
  type FinalPlan,
  type ModelTool,
  type Proposal,
  type RunContext,
  type UnparsedFinal,
} from '../../src/core/contracts';
import type { RunInput } from '../../src/core/run-types';
import type { BudgetPool } from '../../src/core/budget';
import { commitEffects } from '../commit/commit';
import { chargedModelTurn, correctiveMessages, exhausted, MAX_CORRECTIVE_TURNS, unparseableOutcome, unusableFinal } from './model-turn';
import type { RunOutcome, RunState } from '../../src/core/run-state';
import type { SteerInbox } from './steer';
import type { ToolCaller } from './tool-calls';

/**
 * Overlap `steer`: how many times a final answer is asked again because steered events came during
 * its turn. Past it (events arriving faster than a model turn) the run commits the answer it has,
 * and the events still waiting go to the follow-up run: a run always gets to commit.
 */
export const MAX_STEER_REASKS = 2;

/** What the agent loop (agent-loop.ts) hands its model: what the steps before it observed, its tool calls, and the steer inbox. */
export interface Handover {
  observations: unknown[];
  tool: ToolCaller;
  steer?: SteerInbox;
}

/**
 * The model's part of the agent loop: turns with tool calls until a final answer, then the commit
 * stage. Every turn and call is charged before it runs. Events `steer`ed into the run are given to
 * the model as a message before its next turn; a final answer given while some wait is asked again
 * with them, and the inbox closes only where the loop commits or ends on an answer.
 */
export async function converse(
  input: RunInput,
  policy: AgentPolicy,
  model: NonNullable<AgentPolicy['model']>,
  state: RunState,
  pool: BudgetPool,
  { observations, tool, steer }: Handover,
): Promise<RunOutcome> {
  state.phase = 'thinking';
  const given = toolsGiven(policy);
  const run: RunContext = { runKey: input.runKey, wakeKey: input.wakeKey, entity: input.entity, eventKey: input.eventKey, payload: input.payload };
  const messages = openingMessages(input, policy, observations);
  const staged: Proposal[] = [];
  const unparsed: UnparsedFinal[] = [];
  const commit = (final: FinalPlan): Promise<RunOutcome> | RunOutcome => {
    steer?.close(); // what still waits is the follow-up run's (steer.ts)
    const { answer, summary, noOp, effects } = final;
    if (noOp !== undefined) return { reason: 'no_op', summary: `nothing to do: ${noOp}`, output: { answer, ...(staged.length ? { dropped: staged } : {}) } };
    const proposals = [...staged, ...effects];
    if (!proposals.length) return { reason: 'no_op', summary: `nothing to do: no effect was proposed (${summary})`, output: { answer } };
    state.phase = 'committing';
    return commitEffects(input, policy, state, pool, { answer, summary, proposals });
  };
  /** A final answer asked again because steered events came during its turn (and how often so far). */
  let reasked: FinalPlan | undefined;
  let reasks = 0;
  for (;;) {
    messages.push(...(steer?.drain() ?? []));
    const turn = await chargedModelTurn(
      state,
      pool,
      { model },
      { agent: policy.name, agentVersion: policy.version, messages, tools: given, answer: 'agent', run },
    );
    // The budget refused the turn that would have shown the model steered events: the answer it gave
    // before them stands, and they go to the follow-up run (never dropped with the answer's effects).
    if (turn.exhausted && reasked) return commit(reasked);
    if (turn.exhausted) {
      const retry = turn.failedAttempts ? `retrying a failed model turn (${turn.failedAttempts} failed attempt(s) charged)` : 'the next model turn';
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
    // The calls are awaited here, not in a function of their own, so that the loop's steps follow each
    // other as they always have (workflow code: a replayed history expects the same commands in order).
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
}

/**
 * The tools given to the model, with their arguments' schemas; effects too when the model proposes
 * them (the loop stages them; only the commit stage carries them out).
 */
function toolsGiven(policy: AgentPolicy): ModelTool[] {
  return [
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
}

/** The conversation's start: the agent's system prompt with its answer's schema, then the task, the event and what the steps before observed. */
function openingMessages(input: RunInput, policy: AgentPolicy, observations: unknown[]): ChatMessage[] {
  return [
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
}
