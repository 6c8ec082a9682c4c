import Fastify from 'fastify';
import { chatTokens, offlineModel } from '../../src/models/offline';
import { aiSdkModel } from '../../src/models/turn';
import type { ChatMessage } from '../../src/core/contracts';

interface WireMessage {
  role: ChatMessage['role'] | 'developer';
  content: string | null | { type: string; text?: string }[];
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

interface WireBody {
  model: string;
  messages: WireMessage[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown> } }[];
  max_tokens?: number;
  response_format?: { type: string; json_schema?: { schema?: Record<string, unknown> } };
}

/** A scripted assistant reply. Defaults: no text, no tool call, usage as the fake bills it (see {@link FakeRequest.billedTokens}). */
export interface FakeReply {
  content?: string | null;
  /** `arguments` goes on the wire as is when a string (so invalid JSON can be scripted), else as its JSON. `id` defaults to `call_<i>`. */
  toolCalls?: { id?: string; name: string; arguments: string | Record<string, unknown> }[];
  /** @default 'tool_calls' when there are tool calls, else 'stop' */
  finishReason?: string;
  /** Reported usage; `null` reports none. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  /** The model id reported. @default `<requested model>-fake` */
  model?: string;
}

/** A scripted HTTP error: the status, `{ error: { message, type } }` as the body (or `body` as is), and an optional Retry-After header. */
export interface FakeError {
  status: number;
  message?: string;
  retryAfter?: string;
  body?: string;
}

/**
 * What the fake does with one request: answer with the offline model's reasoning (`answer`), answer
 * with this text as the assistant's content and no tool call (`{ content }`), send a scripted reply
 * (`{ reply }`) or HTTP error (`{ error }`), or bill the request and then not answer for `ms`
 * (`{ stall }`), so the client times out after the provider has charged.
 */
export type FakeBehaviour = 'answer' | { content: string } | { reply: FakeReply } | { error: FakeError } | { stall: { ms: number } };

/** One request as the fake saw it: what it billed, and the conversation (for corrective turns and bounds). */
export interface FakeRequest {
  model: string;
  max_tokens?: number;
  authorization?: string;
  messages: ChatMessage[];
  /** The offered tools, with their JSON-Schema parameters as sent. */
  tools: { name: string; description: string; parameters?: Record<string, unknown> }[];
  /** The request body as received. */
  body: WireBody;
  behaviour: FakeBehaviour;
  /** Tokens the provider charged for this request, answered or not (0 for a scripted error). */
  billedTokens: number;
}

const COMPLETION_TOKENS = 7;

/**
 * A local fake of the OpenAI chat completions API (`POST /v1/chat/completions`) that answers with the
 * offline model's reasoning in the wire format, records requests and what it billed for each, and
 * follows a script of behaviours (`script(...)`, one per request, then `answer`).
 */
export function fakeOpenAI() {
  // Load the tokenizer now (it loads on first use): a test's first request must not wait for it
  // against a client time limit of a few hundred ms.
  chatTokens([{ role: 'user', content: 'warm' }]);
  // The client's keep-alive sockets (some left mid-request by a stall) must not hold close() open.
  const app = Fastify({ forceCloseConnections: true });
  const requests: FakeRequest[] = [];
  const queue: FakeBehaviour[] = [];
  app.post<{ Body: WireBody }>('/v1/chat/completions', async (req, res) => {
    const messages = req.body.messages.map(fromWire);
    const tools = (req.body.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters }));
    const behaviour = queue.shift() ?? 'answer';
    const promptTokens = chatTokens(messages, tools);
    const reply = typeof behaviour === 'object' && 'reply' in behaviour ? behaviour.reply : undefined;
    const usage = reply?.usage === undefined ? { prompt_tokens: promptTokens, completion_tokens: COMPLETION_TOKENS } : reply.usage;
    const error = typeof behaviour === 'object' && 'error' in behaviour ? behaviour.error : undefined;
    requests.push({
      model: req.body.model,
      max_tokens: req.body.max_tokens,
      authorization: req.headers.authorization,
      messages,
      tools,
      body: req.body,
      behaviour,
      billedTokens: error ? 0 : (usage?.prompt_tokens ?? promptTokens) + (usage?.completion_tokens ?? COMPLETION_TOKENS),
    });
    if (error) {
      if (error.retryAfter !== undefined) void res.header('retry-after', error.retryAfter);
      return res
        .code(error.status)
        .type('application/json')
        .send(error.body ?? JSON.stringify({ error: { message: error.message ?? `HTTP ${error.status}`, type: 'fake_error', code: null } }));
    }
    if (typeof behaviour === 'object' && 'stall' in behaviour) {
      // Billed above; the answer comes too late for the client, which has given up (timeout).
      await new Promise((r) => setTimeout(r, behaviour.stall.ms));
    }
    const r =
      reply ?? (typeof behaviour === 'object' && 'content' in behaviour ? { content: behaviour.content } : await offlineReply(messages, tools, req.body));
    const toolCalls = (r.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      type: 'function',
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
    }));
    return {
      id: `chatcmpl-${requests.length}`,
      object: 'chat.completion',
      created: 0,
      model: r.model ?? `${req.body.model}-fake`,
      choices: [
        {
          index: 0,
          finish_reason: r.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
          message: { role: 'assistant', content: r.content ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        },
      ],
      ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
    };
  });
  return {
    app,
    requests,
    /** Listen on 127.0.0.1 (a free port); resolves to the base URL for clients, `http://127.0.0.1:<port>/v1`. */
    async start(): Promise<string> {
      return `${await app.listen({ host: '127.0.0.1', port: 0 })}/v1`;
    },
    /** Behaviours for the next requests, in order; after them the fake answers normally. */
    script(...next: FakeBehaviour[]) {
      queue.length = 0;
      queue.push(...next);
    },
  };
}

function fromWire(m: WireMessage): ChatMessage {
  const content = typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('');
  return {
    role: m.role === 'developer' ? 'system' : m.role,
    content,
    ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
    ...(m.tool_calls
      ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) as Record<string, unknown> })) }
      : {}),
  };
}

/** The offline model's reply to the conversation (its ids, not the provider's; usage is the fake's own). */
async function offlineReply(messages: ChatMessage[], tools: FakeRequest['tools'], body: WireBody): Promise<FakeReply> {
  const schema = body.response_format?.type === 'json_schema' ? body.response_format.json_schema?.schema : undefined;
  const step = aiSdkModel(offlineModel());
  const r = await step({
    messages,
    tools: tools.map((t) => ({ ...t, parameters: t.parameters ?? { type: 'object', properties: {} } })),
    maxOutputTokens: body.max_tokens ?? 256,
    ...(schema ? { answerSchema: schema } : {}),
  });
  return {
    content: r.toolCalls.length ? null : r.text,
    toolCalls: r.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })),
  };
}
