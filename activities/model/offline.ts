import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage, FinalAnswer, ModelReply, ModelRequest } from '../../workflows/contracts';
import type { Model } from './types';

/** Tokens of a chat as the o200k tokenizer counts them, with the chat format's per-message overhead. */
export function chatTokens(messages: ChatMessage[], tools: ModelRequest['tools'] = []): number {
  const PER_MESSAGE = 4; // <|im_start|>role ... <|im_end|> framing, as OpenAI documents for its chat format
  let n = 3;
  for (const m of messages) n += PER_MESSAGE + countTokens(m.content) + (m.toolCalls ? countTokens(JSON.stringify(m.toolCalls)) : 0);
  if (tools.length) n += countTokens(JSON.stringify(tools));
  return n;
}

interface Observation {
  headline?: string;
  changed?: boolean;
}

/**
 * The deterministic reasoning of the offline model, shared with the test fake of the OpenAI API:
 * it asks once for every offered tool it has not called yet; then it answers `no_op` when every
 * observation says nothing changed, else `commit` with the observations' headlines as summary.
 */
export function offlineDecide(req: ModelRequest): { toolCalls: { name: string; args: Record<string, unknown> }[]; final?: FinalAnswer } {
  const called = new Set(req.messages.flatMap((m) => m.toolCalls?.map((c) => c.name) ?? []));
  const pending = req.tools.filter((t) => !called.has(t.name));
  if (pending.length) return { toolCalls: pending.map((t) => ({ name: t.name, args: {} })) };
  const observations: Observation[] = [];
  for (const m of req.messages) {
    if (m.role !== 'user' && m.role !== 'tool') continue;
    try {
      const v = JSON.parse(m.content) as { observations?: Observation[] } & Observation;
      observations.push(...(Array.isArray(v.observations) ? v.observations : [v]));
    } catch {
      // not JSON: not an observation
    }
  }
  const changed = observations.filter((o) => o.changed !== false);
  if (!changed.length) return { toolCalls: [], final: { decision: 'no_op', summary: 'nothing changed' } };
  return { toolCalls: [], final: { decision: 'commit', summary: changed.map((o) => o.headline ?? 'changed').join('; ') } };
}

/** The default model: offline, deterministic, with honest token counts from a real tokenizer (o200k_base). */
export class OfflineModel implements Model {
  async complete(req: ModelRequest): Promise<ModelReply> {
    const d = offlineDecide(req);
    const toolCalls = d.toolCalls.map((c, i) => ({ id: `call_${req.messages.length}_${i}`, ...c }));
    const text = d.final ? JSON.stringify(d.final) : JSON.stringify(toolCalls);
    const outputTokens = Math.min(countTokens(text), req.maxOutputTokens);
    return { model: 'offline', toolCalls, final: d.final, usage: { inputTokens: chatTokens(req.messages, req.tools), outputTokens } };
  }
}
