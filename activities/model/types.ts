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

export interface ModelReply {
  model: string;
  toolCalls: ToolCall[];
  final?: FinalAnswer;
  usage: { inputTokens: number; outputTokens: number };
}

/** A model behind wakegate: offline and deterministic by default, or an OpenAI-compatible endpoint. */
export interface Model {
  complete(req: ModelRequest, signal?: AbortSignal): Promise<ModelReply>;
}

/** Parse a final answer from model text; anything that is not the JSON shape is a summary to commit. */
export function parseFinal(text: string): FinalAnswer {
  try {
    const v = JSON.parse(text) as Partial<FinalAnswer>;
    if ((v.decision === 'commit' || v.decision === 'no_op') && typeof v.summary === 'string') return { decision: v.decision, summary: v.summary };
  } catch {
    // plain text
  }
  return { decision: 'commit', summary: text.trim() };
}
