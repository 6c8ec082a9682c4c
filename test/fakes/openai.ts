import Fastify from 'fastify';
import { chatTokens, offlineDecide } from '../../activities/model/offline';
import type { ChatMessage } from '../../activities/model/types';

interface WireMessage {
  role: ChatMessage['role'];
  content: string | null;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

/**
 * A local fake of the OpenAI chat completions API (`POST /v1/chat/completions`) that answers with the
 * offline model's reasoning in the wire format, counts requests, and can stall to test cancellation.
 */
export function fakeOpenAI() {
  const app = Fastify();
  const requests: { model: string; max_tokens?: number; authorization?: string }[] = [];
  app.post<{ Body: { model: string; messages: WireMessage[]; tools?: { function: { name: string; description: string } }[]; max_tokens?: number } }>(
    '/v1/chat/completions',
    async (req) => {
      requests.push({ model: req.body.model, max_tokens: req.body.max_tokens, authorization: req.headers.authorization });
      const messages: ChatMessage[] = req.body.messages.map((m) => ({
        role: m.role,
        content: m.content ?? '',
        toolCallId: m.tool_call_id,
        toolCalls: m.tool_calls?.map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) as Record<string, unknown> })),
      }));
      const tools = (req.body.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description }));
      const d = offlineDecide({ messages, tools, maxOutputTokens: req.body.max_tokens ?? 256 });
      const content = d.final ? JSON.stringify(d.final) : null;
      return {
        id: `chatcmpl-${requests.length}`,
        object: 'chat.completion',
        created: 0,
        model: `${req.body.model}-fake`,
        choices: [
          {
            index: 0,
            finish_reason: d.final ? 'stop' : 'tool_calls',
            message: {
              role: 'assistant',
              content,
              ...(d.final ? {} : { tool_calls: d.toolCalls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }),
            },
          },
        ],
        usage: { prompt_tokens: chatTokens(messages, tools), completion_tokens: 7, total_tokens: chatTokens(messages, tools) + 7 },
      };
    },
  );
  return { app, requests };
}
