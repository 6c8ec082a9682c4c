import { z } from 'zod';
import { aiSdkModel, anthropic, defineAgent, defineEffect, defineTool, http, type AgentDefinition, type EffectReceipt, type ProviderSettings } from 'wakegate';

/** Severities the agent can answer with; `none` files nothing. */
export const Severity = z.enum(['none', 'low', 'high']);

/** The triage agent's final answer (its own schema, not the default `{ conclusion, summary }`). */
export const TriageAnswer = z.object({
  severity: Severity.describe('none: no ticket; low or high: file one ticket of that severity'),
  title: z.string().trim().min(1).max(200).describe('the ticket title'),
  summary: z.string().trim().min(1).max(2000).describe('what the errors show, for the ticket and the run record'),
});
export type TriageAnswer = z.infer<typeof TriageAnswer>;

/** What an incident wake carries (checked at the gate). */
export const IncidentPayload = z.object({
  service: z.string().min(1).max(100),
  alert: z.string().min(1).max(500),
});

/** Where the tracker is and, optionally, which Anthropic model the agent calls. */
export interface IncidentTriageOptions {
  /** The ticket/error tracker's base URL, e.g. `http://127.0.0.1:7310`. */
  trackerUrl: string;
  /** Anthropic's Messages API settings. @default the worker's default model */
  model?: Omit<ProviderSettings, 'baseURL'> & { baseURL?: string };
  /**
   * Who proposes the ticket: `code` (`decide` files one from the answer's severity) or `model` (the
   * model proposes `file_ticket` itself during its loop; the commit stage files what it staged).
   * @default 'code'
   */
  effectsBy?: 'code' | 'model';
}

/**
 * The incident-triage agent: woken by an incident alert about one service, it reads the service's
 * recent errors (`search_errors`), answers `{ severity, title, summary }`, and files at most one
 * ticket (`file_ticket`). The tracker takes no idempotency key, so the ticket is a `reconcile`
 * effect: the effect key is stored as the ticket's reference, and a retry searches for it first.
 */
export function incidentTriage(opts: IncidentTriageOptions): AgentDefinition {
  const base = opts.trackerUrl.replace(/\/+$/, '');

  const searchErrors = defineTool({
    name: 'search_errors',
    description: 'Recent errors of one service from the error tracker (message, count, last seen).',
    input: z.object({ service: z.string().min(1).describe('the service name, e.g. "checkout"') }),
    timeout: '30s',
    run: async ({ service }, { outside, signal }) => {
      const res = await http({ method: 'GET', url: `${base}/errors?service=${encodeURIComponent(service)}`, timeoutMs: outside.httpTimeoutMs, signal });
      const { errors } = res.json as { errors: unknown[] };
      return { content: JSON.stringify({ service, errors }), changed: errors.length > 0 };
    },
  });

  const fileTicket = defineEffect({
    name: 'file_ticket',
    description: 'File one ticket in the tracker.',
    class: 'reconcile',
    reversible: true,
    input: z.object({ title: z.string().min(1).max(200), severity: z.enum(['low', 'high']) }),
    apply: async ({ title, severity }, { effectKey, outside, signal }): Promise<EffectReceipt> => {
      const res = await http({
        method: 'POST',
        url: `${base}/tickets`,
        body: { title, severity, reference: effectKey },
        timeoutMs: outside.httpTimeoutMs,
        signal,
      });
      return { ref: (res.json as { id: string }).id };
    },
    // The tracker has no idempotency key, but it can be searched by the reference we stored: a 503
    // (or any failure) throws, and the run escalates rather than guess.
    find: async ({ effectKey, outside, signal }) => {
      const res = await http({ method: 'GET', url: `${base}/tickets?reference=${encodeURIComponent(effectKey)}`, timeoutMs: outside.httpTimeoutMs, signal });
      const [ticket] = (res.json as { tickets: { id: string }[] }).tickets;
      return ticket ? { ref: ticket.id } : undefined;
    },
  });

  return defineAgent<TriageAnswer>({
    name: 'incident-triage',
    description: 'Triages an incident alert about one service: reads its recent errors and files at most one ticket.',
    triggers: ['incidents'],
    wakeKey: (event) => event.entity,
    wakeKeyRationale: 'One wake per service: alerts about one service while a triage runs are about the same incident.',
    payload: IncidentPayload.passthrough(),
    systemPrompt:
      'You triage one incident alert. Call search_errors for the service named in the event, then answer with JSON ' +
      '{"severity":"none"|"low"|"high","title":"...","summary":"..."}: none when the errors are noise.',
    model: {
      ...(opts.model ? { use: aiSdkModel(anthropic(opts.model)) } : {}),
      maxOutputTokens: 600,
      inputUsdPerMTok: 3,
      outputUsdPerMTok: 15,
    },
    budget: { turns: 4, tokens: 40_000, toolCalls: 6, wallClock: '10m', costUsd: 0.5 },
    tools: [searchErrors],
    effects: [fileTicket],
    answer: TriageAnswer,
    ...(opts.effectsBy === 'model'
      ? {}
      : {
          decide: (answer: TriageAnswer) =>
            answer.severity === 'none'
              ? { noOp: answer.summary }
              : { summary: answer.summary, effects: [{ effect: 'file_ticket', args: { title: answer.title, severity: answer.severity } }] },
        }),
  });
}
