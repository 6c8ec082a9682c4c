import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { chatTokens } from './offline';
import type { ChatMessage, ModelReply, ModelRequest } from '../../workflows/contracts';
import { parseFinal, type Model } from './types';

function toWire(m: ChatMessage): ChatCompletionMessageParam {
  if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: m.toolCallId ?? '' };
  if (m.role === 'assistant' && m.toolCalls?.length) {
    return {
      role: 'assistant',
      content: m.content || null,
      tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.args) } })),
    };
  }
  return { role: m.role, content: m.content } as ChatCompletionMessageParam;
}

/**
 * An OpenAI-compatible chat endpoint through the official client (base URL, key, model from
 * configuration). Usage comes from the provider; when it reports none, the local tokenizer counts.
 * The client's own retries are off: Temporal's activity retries are the one retry policy.
 */
export class OpenAIModel implements Model {
  private readonly client: OpenAI;
  constructor(private readonly opts: { baseUrl: string; apiKey: string; model: string; timeoutMs?: number }) {
    this.client = new OpenAI({ baseURL: opts.baseUrl, apiKey: opts.apiKey || 'none', maxRetries: 0, timeout: opts.timeoutMs ?? 60_000 });
  }

  async complete(req: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    const tools: ChatCompletionTool[] = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: { type: 'object', properties: {} } },
    }));
    const res = await this.client.chat.completions.create(
      { model: this.opts.model, messages: req.messages.map(toWire), max_tokens: req.maxOutputTokens, ...(tools.length ? { tools } : {}) },
      { signal },
    );
    const msg = res.choices[0]?.message;
    const toolCalls = (msg?.tool_calls ?? []).flatMap((c) =>
      c.type === 'function' ? [{ id: c.id, name: c.function.name, args: safeArgs(c.function.arguments) }] : [],
    );
    const text = msg?.content ?? '';
    return {
      model: res.model,
      toolCalls,
      ...(toolCalls.length ? {} : finalOf(text, res.choices[0]?.finish_reason)),
      usage: {
        inputTokens: res.usage?.prompt_tokens ?? chatTokens(req.messages, req.tools),
        outputTokens: res.usage?.completion_tokens ?? chatTokens([{ role: 'assistant', content: text }]),
      },
    };
  }
}

/** A final answer, or the raw text and what is wrong with it (never a guessed decision). */
function finalOf(text: string, finishReason: string | undefined): Pick<ModelReply, 'final' | 'unparsedFinal'> {
  const parsed = parseFinal(text);
  if (parsed.ok) return { final: parsed.final };
  const cut = finishReason === 'length' ? ' (the reply was cut off at max_tokens)' : '';
  return { unparsedFinal: { raw: text, problem: `${parsed.problem}${cut}` } };
}

function safeArgs(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
