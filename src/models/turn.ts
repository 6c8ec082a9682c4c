import {
  APICallError,
  type JSONObject,
  type JSONSchema7,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3Message,
} from '@ai-sdk/provider';
import { ApplicationFailure } from '@temporalio/common';
import type { ChatMessage } from '../core/contracts';
import type { ModelTurn, TurnReply, TurnRequest } from '../core/model';
import { FailureType } from '../core/failures';
import { chatTokens } from './offline';

export type { ModelTurn, TurnReply, TurnRequest } from '../core/model';
export type { ModelTool } from '../core/contracts';

/**
 * One model turn through any AI SDK LanguageModelV3. Calls `doGenerate` directly: that is exactly one
 * HTTP request (generateText would add its own retries and tool loop; Temporal's retry policy is the
 * only retry, and the workflow runs the tools).
 */
export function aiSdkModel(model: LanguageModelV3): ModelTurn {
  return async (req, signal) => {
    const options: LanguageModelV3CallOptions = {
      prompt: toPrompt(req.messages),
      maxOutputTokens: req.maxOutputTokens,
      ...(req.tools.length
        ? { tools: req.tools.map((t) => ({ type: 'function' as const, name: t.name, description: t.description, inputSchema: t.parameters as JSONSchema7 })) }
        : {}),
      // Only on a turn without tools: the answer is due once no tool is wanted, and some providers
      // (Anthropic's older models) emulate a JSON format with a forced tool call that would crowd out the agent's tools.
      ...(req.answerSchema && !req.tools.length ? { responseFormat: { type: 'json' as const, schema: req.answerSchema as JSONSchema7 } } : {}),
      // Not OpenAI's strict mode: it refuses any schema with an optional property, which zod writes for every `.optional()`.
      // The answer's schema also rides along for the offline model on every turn (other providers ignore
      // options not keyed by their name; the prompt already states the schema to a real model).
      providerOptions: { openai: { strictJsonSchema: false }, ...(req.answerSchema ? { wakegate: { answerSchema: req.answerSchema as JSONObject } } : {}) },
      ...(signal ? { abortSignal: signal } : {}),
    };
    let result: LanguageModelV3GenerateResult;
    try {
      result = await model.doGenerate(options);
    } catch (err) {
      throw providerFailure(err, signal);
    }
    return readReply(result, model, req);
  };
}

/** The conversation as a V3 prompt. Consecutive tool results go in one tool message, as providers expect them. */
function toPrompt(messages: ChatMessage[]): LanguageModelV3Message[] {
  const toolNames = new Map<string, string>();
  const prompt: LanguageModelV3Message[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        prompt.push({ role: 'system', content: m.content });
        break;
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: m.content }] });
        break;
      case 'assistant': {
        const calls = m.toolCalls ?? [];
        for (const c of calls) toolNames.set(c.id, c.name);
        prompt.push({
          role: 'assistant',
          content: [
            // Anthropic refuses empty text blocks; an empty text says nothing anyway.
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            // `input` is the arguments object: providers serialize it (OpenAI) or send it as is (Anthropic's tool_use.input).
            ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: c.args })),
          ],
        });
        break;
      }
      case 'tool': {
        const id = m.toolCallId ?? '';
        const toolName = toolNames.get(id);
        // Providers match a result to its call by id (and Gemini by name too): a result for no call is a caller bug.
        if (toolName === undefined) throw new Error(`a tool result answers no earlier tool call (toolCallId ${JSON.stringify(id)})`);
        const part = { type: 'tool-result' as const, toolCallId: id, toolName, output: { type: 'text' as const, value: m.content } };
        const last = prompt.at(-1);
        if (last?.role === 'tool') last.content.push(part);
        else prompt.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return prompt;
}

function readReply(result: LanguageModelV3GenerateResult, model: LanguageModelV3, req: TurnRequest): TurnReply {
  let text = '';
  const toolCalls: TurnReply['toolCalls'] = [];
  for (const part of result.content) {
    if (part.type === 'text') text += part.text;
    // Provider-executed calls (web search and the like) are the provider's business; we offer none.
    else if (part.type === 'tool-call' && !part.providerExecuted) toolCalls.push({ id: part.toolCallId, name: part.toolName, ...parseArgs(part.input) });
  }
  const local = () => chatTokens([{ role: 'assistant', content: text + (toolCalls.length ? JSON.stringify(toolCalls) : '') }]);
  return {
    model: result.response?.modelId ?? model.modelId,
    text,
    toolCalls,
    finishReason: result.finishReason.unified,
    usage: {
      inputTokens: result.usage.inputTokens.total ?? chatTokens(req.messages, req.tools),
      outputTokens: result.usage.outputTokens.total ?? local(),
    },
  };
}

/** A tool call's JSON-encoded input (V3 always encodes it as a string). */
function parseArgs(input: string): { args: unknown; argsError?: string } {
  // Some OpenAI-compatible servers send "" for a call without arguments: that is no arguments, not bad JSON.
  if (input.trim() === '') return { args: {} };
  try {
    return { args: JSON.parse(input) as unknown };
  } catch (err) {
    return { args: {}, argsError: (err as Error).message };
  }
}

/** Default delay after a 429 without a usable Retry-After, in ms. */
const DEFAULT_RATE_LIMIT_DELAY_MS = 1000;

/** What a failed `doGenerate` becomes: see {@link ModelTurn}. */
function providerFailure(err: unknown, signal: AbortSignal | undefined): unknown {
  // Our own cancellation (the activity was cancelled) is not the provider's failure; a deadline is.
  // The abort's reason, not err: the SDK wraps an abort that lands mid-body in an APICallError.
  if (signal?.aborted && !isTimeout(signal.reason)) return signal.reason ?? err;
  if (APICallError.isInstance(err) && err.statusCode !== undefined) {
    const status = err.statusCode;
    if (status === 429) {
      const delay = retryAfterMs(err.responseHeaders) ?? DEFAULT_RATE_LIMIT_DELAY_MS;
      return ApplicationFailure.create({
        type: FailureType.RateLimited,
        message: `model provider rate-limited the request (HTTP 429, retry after ${delay} ms): ${err.message}`,
        nextRetryDelay: delay,
        // Also in the details: SDK 1.24's failure converter does not carry nextRetryDelay back into
        // workflow code, where the run's own retry loop (one reservation per attempt) reads it.
        details: [{ retryAfterMs: delay }],
        cause: err,
      });
    }
    if (status >= 400 && status < 500 && status !== 408) {
      return ApplicationFailure.create({
        type: FailureType.ProviderRejected,
        nonRetryable: true,
        message: `model provider rejected the request (HTTP ${status}): ${err.message}`,
        cause: err,
      });
    }
    return new Error(`model provider failed (HTTP ${status}): ${err.message}`, { cause: err });
  }
  if (APICallError.isInstance(err)) return new Error(`model provider unreachable: ${err.message}`, { cause: err });
  if (isTimeout(err) || isTimeout(signal?.reason)) return new Error(`model provider did not answer in time: ${(err as Error).message}`, { cause: err });
  // Anything else (an invalid prompt, a malformed reply) is not an HTTP status to map: as it came.
  return err;
}

function isTimeout(e: unknown): boolean {
  return e instanceof Error && (e.name === 'TimeoutError' || (e.name === 'AbortError' && /timeout/i.test(e.message)));
}

/** Retry-After (delay-seconds or HTTP-date) in ms, or undefined when absent or unreadable. */
function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  // The SDK collects response headers from fetch's Headers, whose names are lower case.
  const value = headers?.['retry-after']?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
