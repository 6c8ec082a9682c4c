import Fastify from 'fastify';
import { countTokens } from 'gpt-tokenizer';

/** One content block of an Anthropic message, as the Messages API sends and receives them. */
export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string | { type: 'text'; text: string }[]; is_error?: boolean };

/** A request body of `POST /v1/messages`, as far as the fake reads it. */
export interface AnthropicRequestBody {
  model: string;
  max_tokens: number;
  system?: string | { type: 'text'; text: string }[];
  messages: { role: 'user' | 'assistant'; content: string | AnthropicBlock[] }[];
  tools?: { name: string; description?: string; input_schema: Record<string, unknown> }[];
  [key: string]: unknown;
}

/** A scripted reply. Defaults: `stop_reason` `tool_use` when a block is a tool_use, else `end_turn`; usage counted with o200k. */
export interface AnthropicReply {
  /** The content blocks, or one text block. */
  content: string | AnthropicBlock[];
  stop_reason?: string;
  usage?: { input_tokens: number; output_tokens: number };
  /** The model id reported. @default `<requested model>-fake` */
  model?: string;
}

/** A scripted HTTP error: `{ type: 'error', error: { type, message } }` with this status, and an optional Retry-After header. */
export interface AnthropicError {
  status: number;
  /** @default by status: invalid_request_error, authentication_error, rate_limit_error, api_error, … */
  type?: string;
  message?: string;
  retryAfter?: string;
}

/** What the fake does with one request. Unscripted requests get a 500 `api_error` saying so (a test sent one more than it meant to). */
export type AnthropicBehaviour = { reply: AnthropicReply } | { error: AnthropicError } | { compute: () => AnthropicBehaviour };

/** One request as the fake received it. */
export interface AnthropicRequest {
  /** The `x-api-key` header. */
  apiKey?: string;
  /** The `anthropic-version` header. */
  version?: string;
  body: AnthropicRequestBody;
  behaviour?: AnthropicBehaviour;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/**
 * A local fake of Anthropic's Messages API (`POST /v1/messages`) on 127.0.0.1: it answers each
 * request with the next scripted behaviour (`script(...)`) in the wire format and records what it received.
 */
export function fakeAnthropic() {
  const app = Fastify({ forceCloseConnections: true });
  const requests: AnthropicRequest[] = [];
  const queue: AnthropicBehaviour[] = [];
  app.post<{ Body: AnthropicRequestBody }>('/v1/messages', async (req, res) => {
    let behaviour = queue.shift();
    // Decided when the request arrives (a test looks at the world at that moment).
    while (behaviour && 'compute' in behaviour) behaviour = behaviour.compute();
    requests.push({ apiKey: header(req.headers['x-api-key']), version: header(req.headers['anthropic-version']), body: req.body, behaviour });
    const error: AnthropicError | undefined = behaviour
      ? 'error' in behaviour
        ? behaviour.error
        : undefined
      : { status: 500, type: 'api_error', message: 'fake anthropic: no reply scripted for this request' };
    if (error) {
      if (error.retryAfter !== undefined) void res.header('retry-after', error.retryAfter);
      const type = error.type ?? ERROR_TYPES[error.status] ?? 'api_error';
      return res.code(error.status).send({ type: 'error', error: { type, message: error.message ?? `HTTP ${error.status}` } });
    }
    const reply = (behaviour as { reply: AnthropicReply }).reply;
    const content: AnthropicBlock[] = typeof reply.content === 'string' ? [{ type: 'text', text: reply.content }] : reply.content;
    return {
      id: `msg_${requests.length}`,
      type: 'message',
      role: 'assistant',
      model: reply.model ?? `${req.body.model}-fake`,
      content,
      stop_reason: reply.stop_reason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage: reply.usage ?? { input_tokens: countTokens(JSON.stringify(req.body.messages)), output_tokens: countTokens(JSON.stringify(content)) },
    };
  });
  return {
    app,
    requests,
    /** Listen on 127.0.0.1 (a free port); resolves to the base URL for clients, `http://127.0.0.1:<port>/v1`. */
    async start(): Promise<string> {
      return `${await app.listen({ host: '127.0.0.1', port: 0 })}/v1`;
    },
    /** Behaviours for the next requests, in order (replacing any left from before). */
    script(...next: AnthropicBehaviour[]) {
      queue.length = 0;
      queue.push(...next);
    },
  };
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
