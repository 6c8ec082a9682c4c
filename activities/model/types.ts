import { z } from 'zod';

/** The model interface every adapter implements. Plain JSON: requests and replies are recorded in history. */

export interface ToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** On a `tool` message: the call it answers. */
  toolCallId?: string;
  /** On an `assistant` message: the tools it asked for. */
  toolCalls?: ToolCall[];
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools: { name: string; description: string }[];
  /** Hard cap on the reply, so the budget's reservation is an upper bound. */
  maxOutputTokens: number;
}

/** The agent's answer once it has nothing more to read. */
export interface FinalAnswer {
  decision: 'commit' | 'no_op';
  summary: string;
}

/** A reply that asked for no tool and whose text is not a valid {@link FinalAnswer}: never acted on. */
export interface UnparsedFinal {
  /** The model's text as it came (kept for the person the run escalates to). */
  raw: string;
  /** What is wrong with it, in words the corrective turn repeats to the model. */
  problem: string;
}

export interface ModelReply {
  model: string;
  toolCalls: ToolCall[];
  /** Set when the reply is a valid final answer. */
  final?: FinalAnswer;
  /** Set when the reply asked for no tool and is not a valid final answer (fail closed: no decision). */
  unparsedFinal?: UnparsedFinal;
  usage: { inputTokens: number; outputTokens: number };
}

/** A model behind wakegate: offline and deterministic by default, or an OpenAI-compatible endpoint. */
export interface Model {
  complete(req: ModelRequest, signal?: AbortSignal): Promise<ModelReply>;
}

/** The final answer's wire shape: exactly these two decisions and a non-empty summary (extra keys are ignored). */
export const FinalAnswerSchema = z.object({
  decision: z.enum(['commit', 'no_op']),
  summary: z.string().trim().min(1, 'summary must be a non-empty string'),
});

// A reply that is one JSON object inside a single Markdown code fence is still that object.
const FENCED = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/;

/**
 * Parse a final answer from model text. Fails closed: prose, truncated or otherwise invalid JSON,
 * an unknown decision or a missing summary is never read as a decision; it comes back as
 * `{ ok: false, problem }` naming what is wrong.
 */
export function parseFinal(text: string): { ok: true; final: FinalAnswer } | { ok: false; problem: string } {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, problem: 'the reply was empty' };
  const body = FENCED.exec(trimmed)?.[1] ?? trimmed;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    return { ok: false, problem: `the reply is not one JSON object (${(err as Error).message})` };
  }
  const parsed = FinalAnswerSchema.safeParse(value);
  if (!parsed.success) {
    return { ok: false, problem: `the JSON is not a final answer: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(reply)'}: ${i.message}`).join('; ')}` };
  }
  return { ok: true, final: parsed.data };
}
