import { TimeoutType } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, isCancellation, sleep, TimeoutFailure } from '@temporalio/workflow';
import { DeadlinePassed, timeLeftMs } from '../shared/deadline';
import type { AgentPolicy, BudgetDimension } from '../../src/core/policy';
import type { ChatMessage, ModelReply, ModelRequest, ModelTool, UnparsedFinal } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';
import { modelTurn } from './proxies';
import { costUsd, left, reserve, settle, utf8Bytes, type BudgetPool } from '../../src/core/budget';
import type { RunOutcome, RunState } from '../../src/core/run-state';

/**
 * How a model turn is retried. The retry loop is here, in the workflow, not in Temporal's activity
 * retry policy (`modelTurn` runs at most once per schedule): each attempt takes its own reservation
 * before it runs, so a provider that bills an attempt that then fails or times out is charged for
 * every attempt, and an attempt the budget cannot fund is never made.
 */
export const MODEL_TURN_RETRY = {
  /** Attempts per model turn, the first included. */
  maximumAttempts: 3,
  /** Wait before the second attempt, ms; doubled before each later one. */
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  /** Failure types a retry cannot fix. */
  nonRetryableErrorTypes: [FailureType.ProviderRejected],
} as const;

/** How many corrective turns an unparseable final answer gets before the run escalates. */
export const MAX_CORRECTIVE_TURNS = 1;

/** The smallest reply cap worth a model turn; below it the run ends `budget_exhausted` on tokens. */
const MIN_REPLY_TOKENS = 16;

/** Worst-case tokens of a request: bytes bound the input under byte-level BPE; the reply is capped by max tokens. */
export function inputTokenBound(messages: ChatMessage[], tools: ModelTool[]): number {
  const PER_MESSAGE = 8; // chat framing; generous against every provider's documented overhead
  let n = 3 + (tools.length ? utf8Bytes(JSON.stringify(tools)) : 0);
  for (const m of messages) n += PER_MESSAGE + utf8Bytes(m.content) + (m.toolCalls ? utf8Bytes(JSON.stringify(m.toolCalls)) : 0);
  return n;
}

/** A model turn's outcome: the reply, or the budget dimension that would have been crossed by the next attempt. */
export type TurnOutcome =
  | { reply: ModelReply & { attempt: number }; exhausted?: undefined }
  | { exhausted: BudgetDimension; /** Attempts of this turn that failed (each charged its worst case) before the budget ran out. */ failedAttempts: number };

function retryable(err: unknown): boolean {
  if (!(err instanceof ActivityFailure)) return true;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    return !cause.nonRetryable && !(MODEL_TURN_RETRY.nonRetryableErrorTypes as readonly string[]).includes(cause.type ?? '');
  }
  return true; // timeouts and worker loss: the provider may answer next time
}

const isScheduleToClose = (err: unknown) =>
  err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE;

/**
 * The wait before the next attempt: the provider's own `Retry-After` when a 429 gave one (carried in
 * the `RateLimited` failure's details, since SDK 1.24 drops `nextRetryDelay` on its way into workflow
 * code), else the backoff.
 */
function retryDelayMs(err: unknown, attempt: number): number {
  const backoff = MODEL_TURN_RETRY.initialIntervalMs * MODEL_TURN_RETRY.backoffCoefficient ** (attempt - 1);
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  const asked =
    cause instanceof ApplicationFailure && cause.type === FailureType.RateLimited
      ? (cause.details?.[0] as { retryAfterMs?: unknown } | undefined)?.retryAfterMs
      : undefined;
  return typeof asked === 'number' && asked > 0 ? asked : backoff;
}

/**
 * One model turn, every attempt charged before it runs: the reservation is the request's worst case
 * (input bound plus the reply cap, lowered to what is left, and their cost). A successful attempt is
 * settled to the usage the model reports; a failed, timed-out or cancelled one keeps its worst case
 * (the provider may have billed it). A retryable failure is retried after a backoff timer, under a new
 * reservation; when the budget cannot fund the next attempt the turn returns the dimension instead.
 * Cancellation and the last attempt's failure propagate. A run's turn (`state.deadlineMs` set) is
 * bounded by its wall-clock deadline: each attempt times out at it, the backoff never sleeps past it,
 * and once it has passed no attempt is made ({@link DeadlinePassed} propagates).
 */
export async function chargedModelTurn(
  state: RunState,
  pool: BudgetPool,
  policy: { model: NonNullable<AgentPolicy['model']> },
  req: Omit<ModelRequest, 'maxOutputTokens'>,
): Promise<TurnOutcome> {
  const input = inputTokenBound(req.messages, req.tools);
  for (let attempt = 1; ; attempt++) {
    // A run's turn is bounded by its deadline: none is tried once the time is gone (a subagent's has none: its parent's bounds it).
    const leftMs = timeLeftMs(state.deadlineMs);
    const maxOutputTokens = Math.min(policy.model.maxOutputTokens, left(pool, 'tokens') - input);
    if (maxOutputTokens < MIN_REPLY_TOKENS) return { exhausted: 'tokens', failedAttempts: attempt - 1 };
    const r = reserve(pool, { turns: 1, tokens: input + maxOutputTokens, costUsd: costUsd(input, maxOutputTokens, policy.model) });
    if (!r.ok) return { exhausted: r.dimension, failedAttempts: attempt - 1 };
    state.maxAttempt = Math.max(state.maxAttempt, attempt);
    let reply: ModelReply & { attempt: number };
    try {
      reply = await modelTurn({ ...req, maxOutputTokens }, leftMs);
    } catch (err) {
      settle(pool, r.charge, r.charge);
      if (isCancellation(err) || attempt >= MODEL_TURN_RETRY.maximumAttempts || !retryable(err)) throw err;
      // Timed out at the deadline, or failed with no time left: no retry (the agent loop ends the run on wallClockMs).
      const afterMs = timeLeftMs(state.deadlineMs);
      if (isScheduleToClose(err)) throw new DeadlinePassed();
      // Never past the deadline: a wait that would outlast it ends there, and the next attempt is not made.
      await sleep(afterMs === undefined ? retryDelayMs(err, attempt) : Math.min(retryDelayMs(err, attempt), afterMs));
      continue;
    }
    const { inputTokens, outputTokens } = reply.usage;
    settle(pool, r.charge, { turns: 1, tokens: inputTokens + outputTokens, costUsd: costUsd(inputTokens, outputTokens, policy.model) });
    return { reply: { ...reply, attempt } };
  }
}

/** The reply's final answer problem, if it is one: unparseable text, or no tool call and no answer at all. */
export function unusableFinal(reply: ModelReply): UnparsedFinal | undefined {
  if (reply.final) return undefined;
  if (reply.unparsedFinal) return reply.unparsedFinal;
  return reply.toolCalls.length ? undefined : { raw: '', problem: 'the reply asked for no tool and gave no answer' };
}

/**
 * The corrective turn after an unparseable final answer: the model's own reply, then a user message
 * saying what was wrong and the one shape that is accepted (the agent's answer schema).
 */
export function correctiveMessages(bad: UnparsedFinal, answerSchema: Record<string, unknown>): ChatMessage[] {
  return [
    { role: 'assistant', content: bad.raw },
    {
      role: 'user',
      content:
        `Your last reply could not be used: ${bad.problem}. Reply again with exactly one JSON object and nothing else, ` +
        `matching this JSON Schema: ${JSON.stringify(answerSchema)}`,
    },
  ];
}

/** The run's end when the model's final answer stays unparseable after its corrective turn: escalate, with every raw reply kept. */
export function unparseableOutcome(replies: UnparsedFinal[]): RunOutcome {
  return {
    reason: 'escalated',
    summary: `the model's final answer could not be parsed after ${replies.length - 1} corrective turn(s) (${replies.at(-1)?.problem}); nothing was committed, handed to a person`,
    output: { unparsedReplies: replies },
  };
}

/** The run's end when its budget refuses the next step: `detail` names the step, `more` goes in its output. */
export const exhausted = (dimension: BudgetDimension, detail: string, more: Record<string, unknown> = {}): RunOutcome => ({
  reason: 'budget_exhausted',
  summary: `stopped before ${detail}: the ${dimension} budget would be crossed`,
  output: { dimension, ...more },
});
