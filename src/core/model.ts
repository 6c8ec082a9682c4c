import type { ChatMessage, ModelTool } from './contracts';

/* The model-turn contract: what the run asks one model turn and what it gets back. Pure types. */

/** One model turn's request. */
export interface TurnRequest {
  messages: ChatMessage[];
  tools: ModelTool[];
  /** Hard cap on the reply, in tokens (sent to the provider as its max output tokens). */
  maxOutputTokens: number;
  /**
   * JSON Schema of the final answer the agent expects. Sent as the provider's response format
   * (`{ type: 'json', schema }`) only when `tools` is empty; the caller's prompt already describes it.
   */
  answerSchema?: Record<string, unknown>;
}

/** One model turn's reply, as the provider sent it (nothing validated here). */
export interface TurnReply {
  /** The provider's model id as reported (response.modelId), else the configured one. */
  model: string;
  /** The reply's text: all text parts joined. */
  text: string;
  /**
   * Tool calls as the model sent them: `args` is the parsed JSON value, or `{}` with `argsError` (the
   * JSON parser's message) when the arguments were not valid JSON. Never validated against the tool's schema here.
   */
  toolCalls: { id: string; name: string; args: unknown; argsError?: string }[];
  /** The SDK's unified finish reason: 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other'. */
  finishReason: string;
  /** Tokens, as the provider reports them; when it reports none, counted with the local tokenizer (chatTokens). */
  usage: { inputTokens: number; outputTokens: number };
}

/**
 * One model turn: one request, one reply, no tool execution and no retry. Fails with
 * `ProviderRejected` (non-retryable) on a 4xx other than 408/429, `RateLimited` (retryable, with the
 * provider's Retry-After as the next delay) on a 429, and a retryable error on a 5xx, 408, network
 * failure or timeout. An abort of `signal` propagates as that abort.
 */
export type ModelTurn = (req: TurnRequest, signal?: AbortSignal) => Promise<TurnReply>;
