import { activityInfo, getClient, heartbeat, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { agentNamed, agentVersions, type AgentRegistry } from '../../src/agents/registry';
import type { OutsideConfig } from '../../src/config/config';
import { withHeartbeat } from '../shared/heartbeat';
import type { RunActivities } from '../../src/core/contracts';
import type { RunVerdict } from '../../src/core/supervisor-types';
import { FailureType } from '../../src/core/failures';
import type { ModelTurn, TurnReply } from '../../src/core/model';
import { parseAnswer } from './answer';
import { parseArgs } from '../../src/core/args';
import { DefaultAnswer, jsonSchemaOf } from '../../src/agents/definition';
import type { AgentDefinition, EffectDefinition, ToolDefinition } from '../../src/agents/types';
import { windowTaken } from './window-taken';
import type { CheckedCall, ModelReply, ModelRequest, Proposal } from '../../src/core/contracts';
import { slotsAfterReset } from '../../src/commit/executions';

/** The payload a run works on, merged by the agent's own `mergePayload`; one that throws fails the run for good. */
function mergedPayload(def: AgentDefinition, agent: string, payloads: Record<string, unknown>[]): Record<string, unknown> {
  try {
    return def.mergePayload(payloads.map((p) => ({ payload: p })));
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`agent "${agent}": mergePayload threw: ${(err as Error).message}`, FailureType.MergeFailed);
  }
}

/** The run's activities: the agent's policy and payload, the model, the agent's tools. */
export function createRunActivities(opts: {
  agents: AgentRegistry;
  /** The model of agents that name none of their own. */
  model: ModelTurn;
  outside: OutsideConfig;
  /** The supervisor's word on a run about to start: a permit from this process's stock, or hold (src/supervisor/links.ts). */
  runVerdict: (taskQueue: string, agent: string) => Promise<RunVerdict>;
  /** The version a new run of an agent with other versions gets, from its rollout (src/run/rollout-views.ts); undefined: its own. */
  rolloutVersion: (taskQueue: string, agent: string, wakeKey: string) => Promise<string | undefined>;
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
    async prepareRun({ agent, wakeKey, agentVersion, payloads, withoutVerdict, window, afterReset }) {
      // The version the run is pinned to from here on: the one it has, or its rollout's word for its wake key.
      const versioned = agentVersions(agentNamed(agents, agent)).others.length > 0;
      const def = agentNamed(agents, agent, agentVersion ?? (versioned ? await opts.rolloutVersion(activityInfo().taskQueue, agent, wakeKey) : undefined));
      const payload = mergedPayload(def, agent, payloads);
      const { workflowExecution } = activityInfo();
      const base = {
        // Under the agent's own name: a version is a version of this agent, whatever it calls itself.
        policy: { ...def.policy, name: agent },
        payload,
        ...(afterReset && workflowExecution
          ? {
              resetSlots: await slotsAfterReset(getClient(), workflowExecution.workflowId, workflowExecution.runId, afterReset.carried),
              slotsReadFor: workflowExecution.runId,
            }
          : {}),
      };
      const taken = window ? await windowTaken(getClient(), window) : undefined;
      if (taken) return { ...base, taken };
      const verdict = withoutVerdict ? undefined : await opts.runVerdict(activityInfo().taskQueue, agent);
      return { ...base, ...(verdict ? { verdict } : {}) };
    },

    /**
     * One model turn: one request to the agent's model (or the worker's default), then every tool call
     * checked against the agent's tools and effects, or the final answer parsed against the agent's
     * schema and passed to its `decide`. Nothing is carried out here. Heartbeats while it waits, so a
     * kill cancels it mid-call. A provider's 4xx is `ProviderRejected` (final), a 429 `RateLimited`
     * with its Retry-After.
     */
    async modelTurn(req) {
      const def = agentNamed(agents, req.agent, req.agentVersion);
      const answerSchema = req.answer === 'agent' ? def.policy.answerSchema : DEFAULT_ANSWER_SCHEMA;
      const turn = def.model ?? model;
      const raw = await withHeartbeat((signal) =>
        turn({ messages: req.messages, tools: req.tools, maxOutputTokens: req.maxOutputTokens, answerSchema }, signal),
      );
      const { attempt } = activityInfo();
      const reply = readReply(def, req, raw);
      log.info('model turn', {
        agent: req.agent,
        model: reply.model,
        attempt,
        ...reply.usage,
        toolCalls: reply.toolCalls.length,
        final: reply.final ? 'answer' : reply.unparsedFinal ? 'unparsed' : undefined,
      });
      return { ...reply, attempt };
    },

    /**
     * One call of one of the agent's tools (its own code, from its definition): reads only, never an
     * effect. Heartbeats every second with the tool's last recorded progress, which a retry receives
     * as `resumeFrom`; cancellation (kill, wall clock, shutdown) aborts it through the signal.
     */
    async toolCall(input) {
      const info = activityInfo();
      const tool = agentNamed(agents, input.agent, input.agentVersion).tools[input.tool] as ToolDefinition | undefined;
      if (!tool) throw ApplicationFailure.nonRetryable(`agent "${input.agent}" has no tool named "${input.tool}"`, FailureType.UnknownTool);
      const args = parseArgs(input.args ?? {}, tool.input);
      if (!args.ok) throw ApplicationFailure.nonRetryable(`tool "${input.tool}" of agent "${input.agent}": ${args.problem}`, FailureType.InvalidArguments);
      let progress: unknown = info.heartbeatDetails;
      const result = await withHeartbeat(
        (signal) =>
          tool.run(args.args, {
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

const DEFAULT_ANSWER_SCHEMA = jsonSchemaOf(DefaultAnswer, 'the default answer');

/** A proposal checked against the agent's effects: the parsed arguments, or what is wrong. */
function checkProposal(def: AgentDefinition, p: { effect: string; args: unknown }): { ok: true; proposal: Proposal } | { ok: false; problem: string } {
  const effect = def.effects[p.effect] as EffectDefinition | undefined;
  if (!effect) return { ok: false, problem: `no effect named "${p.effect}" (effects: ${Object.keys(def.effects).join(', ') || 'none'})` };
  const args = parseArgs(p.args, effect.input);
  return args.ok ? { ok: true, proposal: { effect: p.effect, args: args.args } } : { ok: false, problem: `effect "${p.effect}": ${args.problem}` };
}

/** One tool call checked before anything runs: a tool with valid arguments, an effect proposal, or the error the model is told. */
function checkCall(def: AgentDefinition, req: ModelRequest, call: TurnReply['toolCalls'][number]): CheckedCall {
  const base = {
    id: call.id,
    name: call.name,
    args: (call.args && typeof call.args === 'object' && !Array.isArray(call.args) ? call.args : {}) as Record<string, unknown>,
  };
  if (call.argsError) return { ...base, error: `the arguments are not valid JSON (${call.argsError})` };
  const given = req.tools.some((t) => t.name === call.name);
  const tool = def.tools[call.name] as ToolDefinition | undefined;
  if (given && tool) {
    const args = parseArgs(call.args, tool.input);
    return args.ok ? { ...base, args: args.args } : { ...base, error: args.problem };
  }
  if (given && def.policy.proposedBy === 'model' && def.effects[call.name]) {
    const p = checkProposal(def, { effect: call.name, args: call.args });
    return p.ok ? { ...base, args: p.proposal.args, proposes: true } : { ...base, error: p.problem };
  }
  return { ...base, error: `no tool named "${call.name}" is given to the model (tools: ${req.tools.map((t) => t.name).join(', ') || 'none'})` };
}

/** The turn's reply as the run reads it: checked calls, or a parsed answer and the plan the agent made of it, or why the answer cannot be used. */
export function readReply(def: AgentDefinition, req: ModelRequest, raw: TurnReply): ModelReply {
  const base = { model: raw.model, usage: raw.usage };
  if (raw.toolCalls.length) return { ...base, toolCalls: raw.toolCalls.map((c) => checkCall(def, req, c)) };
  const cut = raw.finishReason === 'length' ? ' (the reply was cut off at its output token limit)' : '';
  const unparsed = (problem: string): ModelReply => ({ ...base, toolCalls: [], unparsedFinal: { raw: raw.text, problem: `${problem}${cut}` } });
  if (req.answer === 'summary') {
    const parsed = parseAnswer(raw.text, DefaultAnswer);
    return parsed.ok ? { ...base, toolCalls: [], final: { answer: parsed.answer, summary: parsed.answer.summary, effects: [] } } : unparsed(parsed.problem);
  }
  const parsed = parseAnswer(raw.text, def.answer);
  if (!parsed.ok) return unparsed(parsed.problem);
  const answer = JSON.parse(JSON.stringify(parsed.answer)) as unknown; // plain JSON for history
  let decision;
  try {
    decision = def.decide(parsed.answer, { run: req.run ?? { runKey: '', wakeKey: '', entity: '', eventKey: '', payload: {} } });
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`agent "${req.agent}" decide() threw: ${(err as Error).message}`, FailureType.DecideFailed);
  }
  if ('noOp' in decision) return { ...base, toolCalls: [], final: { answer, summary: decision.noOp, noOp: decision.noOp, effects: [] } };
  const effects: Proposal[] = [];
  for (const p of decision.effects ?? []) {
    const checked = checkProposal(def, p);
    // The answer led the agent's code to an effect it cannot carry out: the model is told, like a bad call.
    if (!checked.ok) return unparsed(`your answer leads to an effect that cannot be carried out: ${checked.problem}`);
    effects.push(checked.proposal);
  }
  return { ...base, toolCalls: [], final: { answer, summary: decision.summary, effects } };
}
