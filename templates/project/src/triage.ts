import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { aiSdkModel, defineAgent, defineEffect, defineTool, offlineModel, z } from 'wakegate';

/**
 * A read tool: the model calls it with typed arguments (checked against `input` before `run`).
 * Tools only read. Replace the body with a call to your tracker's API; `changed: true` tells the
 * offline model (and your `decide`) that there is something to act on.
 */
export const readTicket = defineTool({
  name: 'read_ticket',
  description: 'Read one ticket: its title and what it asks for.',
  input: z.object({ ticketId: z.string().min(1), title: z.string().min(1) }),
  run: async ({ ticketId, title }) => ({
    content: JSON.stringify({ changed: true, headline: `${ticketId} needs a label: ${title}` }),
    changed: true,
  }),
});

/**
 * The side effect, run by the commit stage once per effect key however often the wake repeats or a
 * worker dies. This one appends a line to a file (a stand-in for your tracker) and is idempotent by
 * construction: a line is keyed by the effect key and written once. With a real API, send
 * `effectKey` as its idempotency key (class 'provider_key'), or give it a `find` (class 'reconcile').
 */
export function labelTicket(labelsFile: string) {
  return defineEffect({
    name: 'label_ticket',
    description: 'Put one label on a ticket.',
    class: 'idempotent',
    reversible: true,
    input: z.object({ ticketId: z.string().min(1), label: z.enum(['bug', 'question', 'feature']) }),
    apply: async ({ ticketId, label }, { effectKey }) => {
      mkdirSync(path.dirname(labelsFile), { recursive: true });
      const existed = existsSync(labelsFile) && readFileSync(labelsFile, 'utf8').includes(`"${effectKey}"`);
      if (!existed) appendFileSync(labelsFile, JSON.stringify({ effectKey, ticketId, label }) + '\n');
      return { ref: effectKey, existed };
    },
  });
}

/** What the model must answer with; `decide` turns it into effects, in code you can test. */
const Answer = z.object({
  conclusion: z.enum(['commit', 'no_op']),
  label: z.enum(['bug', 'question', 'feature']),
  summary: z.string().min(1),
});

export function triage(labelsFile: string) {
  return defineAgent({
    name: 'triage',
    description: 'Labels each new or edited ticket once.',
    triggers: ['tickets', 'schedule'],
    wakeKey: (event) => String(event.payload.ticketId ?? event.entity),
    wakeKeyRationale: 'One wake per ticket: two edits of one ticket are looked at one after the other, never at once.',
    systemPrompt: 'Read the ticket, then answer with the one label that fits it best.',
    // Offline and deterministic, so the tests need no key. For a real model:
    //   model: { use: anthropic({ model: 'claude-sonnet-4-5' }), maxOutputTokens: 1024, inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
    model: { use: aiSdkModel(offlineModel()), maxOutputTokens: 300, inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
    budget: { turns: 4, tokens: 20_000, toolCalls: 4, wallClock: '2m', costUsd: 0.1 },
    tools: [readTicket],
    effects: [labelTicket(labelsFile)],
    answer: Answer,
    decide: (answer, { run }) =>
      answer.conclusion === 'no_op'
        ? { noOp: answer.summary }
        : { summary: answer.summary, effects: [{ effect: 'label_ticket', args: { ticketId: run.wakeKey, label: answer.label } }] },
  });
}
