import Fastify from 'fastify';
import { chatTokens, offlineDecide } from '../../activities/model/offline';
import type { ChatMessage } from '../../workflows/contracts';

interface WireMessage {
  role: ChatMessage['role'];
  content: string | null;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

/**
 * What the fake does with one request: answer with the offline model's reasoning (`answer`), answer
 * with this text as the assistant's content and no tool call (`{ content }`), or bill the request and
 * then not answer for `ms` (`{ stall }`), so the client times out after the provider has charged.
 */
export type FakeBehaviour = 'answer' | { content: string } | { stall: { ms: number } };

/** One request as the fake saw it: what it billed, and the conversation (for corrective turns and bounds). */
export interface FakeRequest {
  model: string;
  max_tokens?: number;
  authorization?: string;
  messages: ChatMessage[];
  tools: { name: string; description: string }[];
  behaviour: FakeBehaviour;
  /** Tokens the provider charged for this request, answered or not. */
  billedTokens: number;
}

/**
 * A local fake of the OpenAI chat completions API (`POST /v1/chat/completions`) that answers with the
 * offline model's reasoning in the wire format, records requests and what it billed for each, and
 * follows a script of behaviours (`script(...)`, one per request, then `answer`): a garbled final
 * answer, or a stall after billing.
 */
export function fakeOpenAI() {
  // The client's keep-alive sockets (some left mid-request by a stall) must not hold close() open.
  const app = Fastify({ forceCloseConnections: true });
  const requests: FakeRequest[] = [];
  const queue: FakeBehaviour[] = [];
  const COMPLETION_TOKENS = 7;
  app.post<{ Body: { model: string; messages: WireMessage[]; tools?: { function: { name: string; description: string } }[]; max_tokens?: number } }>(
    '/v1/chat/completions',
    async (req) => {
      const messages: ChatMessage[] = req.body.messages.map((m) => ({
        role: m.role,
        content: m.content ?? '',
        toolCallId: m.tool_call_id,
        toolCalls: m.tool_calls?.map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) as Record<string, unknown> })),
      }));
      const tools = (req.body.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description }));
      const behaviour = queue.shift() ?? 'answer';
      const promptTokens = chatTokens(messages, tools);
      requests.push({
        model: req.body.model,
        max_tokens: req.body.max_tokens,
        authorization: req.headers.authorization,
        messages,
        tools,
        behaviour,
        billedTokens: promptTokens + COMPLETION_TOKENS,
      });
      if (typeof behaviour === 'object' && 'stall' in behaviour) {
        // Billed above; the answer comes too late for the client, which has given up (timeout).
        await new Promise((r) => setTimeout(r, behaviour.stall.ms));
      }
      const d =
        typeof behaviour === 'object' && 'content' in behaviour
          ? { toolCalls: [], final: undefined, text: behaviour.content }
          : { ...offlineDecide({ messages, tools, maxOutputTokens: req.body.max_tokens ?? 256 }), text: undefined };
      const content = d.text ?? (d.final ? JSON.stringify(d.final) : null);
      const isFinal = content !== null;
      return {
        id: `chatcmpl-${requests.length}`,
        object: 'chat.completion',
        created: 0,
        model: `${req.body.model}-fake`,
        choices: [
          {
            index: 0,
            finish_reason: isFinal ? 'stop' : 'tool_calls',
            message: {
              role: 'assistant',
              content,
              ...(isFinal ? {} : { tool_calls: d.toolCalls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }),
            },
          },
        ],
        usage: { prompt_tokens: promptTokens, completion_tokens: COMPLETION_TOKENS, total_tokens: promptTokens + COMPLETION_TOKENS },
      };
    },
  );
  return {
    app,
    requests,
    /** Behaviours for the next requests, in order; after them the fake answers normally. */
    script(...next: FakeBehaviour[]) {
      queue.length = 0;
      queue.push(...next);
    },
  };
}
