import type * as Tokenizer from 'gpt-tokenizer';
import type {
  JSONSchema7,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { EFFECT_TOOL_MARK, type ChatMessage } from '../core/contracts';

// The tokenizer's ranks take a fifth of a second to load: only a process that counts tokens pays it
// (a CLI call that keys an event never does).
let tokenizer: typeof Tokenizer | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const countTokens = (text: string): number => (tokenizer ??= require('gpt-tokenizer') as typeof Tokenizer).countTokens(text);

/**
 * Tokens of a chat as the o200k tokenizer counts them, with the chat format's per-message overhead,
 * plus the tools' JSON (name, description and whatever else each carries, e.g. its parameters).
 */
export function chatTokens(messages: ChatMessage[], tools: readonly { name: string; description: string }[] = []): number {
  const PER_MESSAGE = 4; // <|im_start|>role ... <|im_end|> framing, as OpenAI documents for its chat format
  let n = 3;
  for (const m of messages) n += PER_MESSAGE + countTokens(m.content) + (m.toolCalls ? countTokens(JSON.stringify(m.toolCalls)) : 0);
  if (tools.length) n += countTokens(JSON.stringify(tools));
  return n;
}

/**
 * The default model: offline and deterministic, as an AI SDK LanguageModelV3 (provider `wakegate`,
 * model `offline`), with honest token counts from a real tokenizer (o200k_base).
 *
 * Its reasoning: it calls, all in one reply, every tool it is given and has not called yet, except tools
 * whose description starts with `[effect]` (proposals, not reads), with arguments taken from the
 * event's payload in the first user message (else each property's default, first example, first enum
 * value; a property with none is left out). Then it answers `no_op` when no observation says something
 * changed, else `commit` with the observations' headlines joined by "; " as summary, shaped to the
 * call's JSON response format when there is one.
 *
 * Usage: input = {@link chatTokens} of the prompt and tools; output = tokens of what it emits, capped
 * at maxOutputTokens. It never fails, except by an abort of the call's signal.
 */
export function offlineModel(): LanguageModelV3 {
  const doGenerate = async (options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> => {
    options.abortSignal?.throwIfAborted();
    const messages = fromPrompt(options.prompt);
    const tools = (options.tools ?? []).flatMap((t) =>
      t.type === 'function' ? [{ name: t.name, description: t.description ?? '', parameters: t.inputSchema }] : [],
    );
    const told = options.providerOptions?.wakegate?.answerSchema as JSONSchema7 | undefined;
    const d = decide(messages, tools, options.responseFormat?.type === 'json' ? options.responseFormat.schema : told);
    const calls = d.calls.map((c, i) => ({ id: `call_${messages.length}_${i}`, name: c.name, args: c.args }));
    const emitted = d.answer ?? JSON.stringify(calls);
    const content: LanguageModelV3Content[] =
      d.answer !== undefined
        ? [{ type: 'text', text: d.answer }]
        : calls.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.args) }));
    const inputTokens = chatTokens(messages, tools);
    const outputTokens = Math.min(countTokens(emitted), options.maxOutputTokens ?? Infinity);
    return {
      content,
      finishReason: d.answer !== undefined ? { unified: 'stop', raw: 'stop' } : { unified: 'tool-calls', raw: 'tool_calls' },
      usage: {
        inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
      },
      response: { modelId: 'offline' },
      warnings: [],
    };
  };
  return {
    specificationVersion: 'v3',
    provider: 'wakegate',
    modelId: 'offline',
    supportedUrls: {},
    doGenerate,
    // The same reply, as a stream, for callers that stream (streamText).
    async doStream(options) {
      const r = await doGenerate(options);
      const parts: LanguageModelV3StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', modelId: 'offline' },
      ];
      for (const c of r.content) {
        if (c.type === 'text') parts.push({ type: 'text-start', id: '0' }, { type: 'text-delta', id: '0', delta: c.text }, { type: 'text-end', id: '0' });
        else if (c.type === 'tool-call') parts.push(c);
      }
      parts.push({ type: 'finish', usage: r.usage, finishReason: r.finishReason });
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          start(controller) {
            for (const p of parts) controller.enqueue(p);
            controller.close();
          },
        }),
      };
    },
  };
}

/** The V3 prompt as the chat it came from, so usage counts exactly what aiSdkModel's caller sent. */
function fromPrompt(prompt: LanguageModelV3Prompt): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of prompt) {
    if (m.role === 'system') out.push({ role: 'system', content: m.content });
    else if (m.role === 'user') out.push({ role: 'user', content: m.content.map((p) => (p.type === 'text' ? p.text : '')).join('') });
    else if (m.role === 'assistant') {
      const toolCalls = m.content.flatMap((p) =>
        p.type === 'tool-call'
          ? [{ id: p.toolCallId, name: p.toolName, args: (typeof p.input === 'string' ? (parseJson(p.input) ?? {}) : p.input) as Record<string, unknown> }]
          : [],
      );
      const content = m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
      out.push({ role: 'assistant', content, ...(toolCalls.length ? { toolCalls } : {}) });
    } else {
      for (const p of m.content) {
        if (p.type !== 'tool-result') continue;
        const o = p.output;
        const content = o.type === 'text' || o.type === 'error-text' ? o.value : o.type === 'json' || o.type === 'error-json' ? JSON.stringify(o.value) : '';
        out.push({ role: 'tool', content, toolCallId: p.toolCallId });
      }
    }
  }
  return out;
}

interface Observation {
  headline?: string;
  changed?: boolean;
}

interface OfflineReply {
  calls: { name: string; args: Record<string, unknown> }[];
  /** The final answer's JSON text, when no tool is pending. */
  answer?: string;
}

function decide(
  messages: ChatMessage[],
  tools: { name: string; description: string; parameters: JSONSchema7 }[],
  answerSchema: JSONSchema7 | undefined,
): OfflineReply {
  const called = new Set(messages.flatMap((m) => m.toolCalls?.map((c) => c.name) ?? []));
  // An [effect] tool proposes a change; the offline model only reads, and decides with commit/no_op.
  const pending = tools.filter((t) => !called.has(t.name) && !t.description.startsWith(EFFECT_TOOL_MARK));
  if (pending.length) {
    const payload = eventPayload(messages);
    return { calls: pending.map((t) => ({ name: t.name, args: argsFor(t.parameters, payload) })) };
  }
  const changed = observations(messages).filter((o) => o.changed !== false);
  const verdict: Verdict = changed.length
    ? { conclusion: 'commit', summary: changed.map((o) => o.headline ?? 'changed').join('; '), changed: true }
    : { conclusion: 'no_op', summary: 'nothing changed', changed: false };
  const answer = answerSchema ? fill(answerSchema, verdict) : { conclusion: verdict.conclusion, summary: verdict.summary };
  return { calls: [], answer: JSON.stringify(answer) };
}

/** `event.payload` of the first user message (the run's opening JSON), or {} when there is none. */
function eventPayload(messages: ChatMessage[]): Record<string, unknown> {
  const first = messages.find((m) => m.role === 'user');
  const v = first ? parseJson(first.content) : undefined;
  const payload = isObject(v) && isObject(v.event) ? v.event.payload : undefined;
  return isObject(payload) ? payload : {};
}

/** Arguments for a tool: per property, the payload's value, else its default, first example or first enum value. */
function argsFor(schema: JSONSchema7, payload: Record<string, unknown>): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    const p = typeof prop === 'object' ? prop : {};
    const value = Object.hasOwn(payload, key)
      ? payload[key]
      : p.default !== undefined
        ? p.default
        : Array.isArray(p.examples) && p.examples.length
          ? p.examples[0]
          : p.enum?.[0];
    // A required property with no value is left out: the caller validates and tells the model.
    if (value !== undefined) args[key] = value;
  }
  return args;
}

/** Every observation in the chat: tool results and user messages whose JSON has `changed`/`headline` or an `observations` array. */
function observations(messages: ChatMessage[]): Observation[] {
  const found: Observation[] = [];
  for (const m of messages) {
    if (m.role !== 'user' && m.role !== 'tool') continue;
    const v = parseJson(m.content);
    if (!isObject(v)) continue;
    if (Array.isArray(v.observations)) found.push(...v.observations.filter(isObject));
    else if ('changed' in v || 'headline' in v) found.push(v);
  }
  return found;
}

interface Verdict {
  conclusion: 'commit' | 'no_op';
  summary: string;
  changed: boolean;
}

/** A value of `schema` that carries the verdict: see {@link offlineModel}. */
function fill(schema: JSONSchema7, v: Verdict, key?: string): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return key === 'conclusion' && schema.enum.includes(v.conclusion) ? v.conclusion : schema.enum[0];
  const branch = (schema.anyOf ?? schema.oneOf)?.find((s) => typeof s === 'object' && s.type !== 'null');
  if (typeof branch === 'object') return fill(branch, v, key);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : undefined)) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, p]) => [k, fill(typeof p === 'object' ? p : {}, v, k)]));
    case 'string':
      return key === 'conclusion' ? v.conclusion : v.summary;
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return v.changed;
    case 'array':
      return [];
    default:
      return null;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined; // not JSON: not an observation
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
