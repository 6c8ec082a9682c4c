import { z } from 'zod';
import type { FinalAnswer, ModelReply, ModelRequest } from '../../workflows/contracts';

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
