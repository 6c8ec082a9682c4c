import type { GateAnswer } from '../../core/decision';
import { isRefusal } from '../../core/decision';
import { errorBody, type ErrorBody } from '../../core/error-body';

/**
 * The HTTP status of a gate answer. Every decision that is not a refusal is 202: the gate only
 * answers once Temporal has the event (a started run, an open or finished run that holds the key,
 * or, as the gate grows, a coalescer that absorbed it). A refusal is 409 for `mismatch` (the key
 * was used with other inputs, like Stripe's idempotency error) and 422 for any other refusing
 * decision, except the supervisor's `refused` (over a rolling cap): 429, to be sent again after
 * Retry-After. Decisions pass through unchanged.
 */
export function statusOf(answer: GateAnswer): 202 | 409 | 422 | 429 {
  if (!isRefusal(answer.decision)) return 202;
  if (answer.decision === 'refused') return 429;
  return answer.decision === 'mismatch' ? 409 : 422;
}

/** The body for a gate answer: the gate's JSON, plus the shared error shape for a refusal. */
export function answerBody(answer: GateAnswer): GateAnswer | (GateAnswer & ErrorBody) {
  if (!isRefusal(answer.decision)) return answer;
  return { ...answer, ...errorBody(answer.decision, answer.message ?? `refused: ${answer.decision}`) };
}

/** Nesting depth of a parsed JSON value (a scalar is 0). Iterative: a hostile body cannot blow the stack. */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
}

/** What the webhook listener answers one request: status, body, the reason it counts and logs, extra headers. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly reason: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** A refusal in the shared error shape, counted under its code. */
export const refuse = (status: number, code: string, message: string, issues?: { path: string; message: string }[]): Reply =>
  new Reply(status, errorBody(code, message, issues), code);
