import { defineAgent, defineTool, defineTrigger, z, type ModelTurn, type TurnReply } from 'wakegate';
import { postSummary } from '../../examples/campaign-reporter';

/**
 * The soak's steer agent: notes about a ticket arrive by queue (source `notes`), one coalescer per
 * ticket with overlap `steer`, so that a note arriving while the ticket's run works is given to that
 * run's model before its next turn. Its budget is tight (four model turns, one tool call): a run
 * whose model answers while notes still wait is asked again, twice at most, and past that it ends
 * `budget_exhausted` with notes it took but never showed its model, the case the soak's
 * `unseenAbsorbed` looks for. Its coalescers have short horizons (20 s dedup, 20 s idle close), so
 * that they close during the soak and the fault injector can redeliver old notes to a new one.
 *
 * What the model saw is readable from Temporal alone: each note's payload carries its own event key
 * (`noteKey`, computed by the sender), the merged payload lists every note of the batch, and a
 * steered note is given with its key. So an event key appears in the input of some `modelTurn`
 * activity of the run (its history's ActivityTaskScheduled input: the messages the model turn was
 * given) exactly when the model was given that event.
 */
export const NOTES_SOURCE = 'notes';
export const NOTES_AGENT = 'soak-notes';
/** A model turn and the tool take this long: notes arriving meanwhile are steered into a live run. */
const MODEL_MS = 1200;
const TOOL_MS = 2500;

export const NotePayload = z.object({ text: z.string().min(1).max(400), noteKey: z.string().min(1).max(400) });

export const notesTrigger = defineTrigger({
  source: NOTES_SOURCE,
  description: 'The soak: notes added to a ticket, by queue; wakes the soak-notes steer agent.',
  eventTypes: ['note.added'],
  bucket: '1s',
  keyRationale:
    'One logical event per (ticket, second the note was added): a redelivered note carries the same time and is one event; ' +
    'the soak gives every note its own second. Folding a ticket’s notes together is the agent’s wake key’s job.',
  fingerprint: ['text'],
  payload: NotePayload.passthrough(),
});

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason as Error);
    });
  });

/**
 * The soak's stand-in model for this agent, deterministic: a turn takes {@link MODEL_MS}; the first
 * reads the ticket (one tool call), every later one answers `commit`, naming how many notes it has
 * been told of. Usage is reported as a fixed, honest-enough count: the budget under test is turns.
 */
const notesModel: ModelTurn = async (req, signal): Promise<TurnReply> => {
  await sleep(MODEL_MS, signal);
  const usage = { inputTokens: 300, outputTokens: 30 };
  if (!req.messages.some((m) => m.role === 'tool'))
    return {
      model: 'soak-notes',
      text: '',
      toolCalls: [{ id: `read-${req.messages.length}`, name: 'read_ticket', args: {} }],
      finishReason: 'tool-calls',
      usage,
    };
  const told = req.messages.filter((m) => m.role === 'user').reduce((n, m) => n + (m.content.match(/"noteKey"|"key"/g)?.length ?? 0), 0);
  return { model: 'soak-notes', text: JSON.stringify({ conclusion: 'commit', summary: `${told} notes read` }), toolCalls: [], finishReason: 'stop', usage };
};

export const notesAgent = defineAgent({
  name: NOTES_AGENT,
  description: 'The soak: reads a ticket and posts one summary of every note it was told of.',
  triggers: [NOTES_SOURCE],
  wakeKey: (event) => event.entity,
  wakeKeyRationale: 'One wake per ticket: every note on a ticket is worked into the run about it (steered in while it runs).',
  coalesce: { debounce: { period: '1s', maxWait: '4s' }, whileRunning: 'steer', dedupHorizon: '20s', idleClose: '20s' },
  payload: NotePayload.passthrough(),
  // Every note of the batch, each with its key: the model's first message lists all of them.
  mergePayload: (events) => ({ notes: events.map((e) => ({ noteKey: e.payload.noteKey, text: e.payload.text })) }),
  systemPrompt: 'Read the ticket, then post one summary naming every note you were told of.',
  model: { use: notesModel, maxOutputTokens: 100, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
  // Tight in turns and tool calls; the wall clock leaves room for the soak's faults (a stopped worker, a server restart).
  budget: { turns: 4, tokens: 20_000, toolCalls: 1, wallClock: '10m', costUsd: 0.5 },
  tools: [
    defineTool({
      name: 'read_ticket',
      description: 'Read the ticket (takes a while).',
      timeout: '10s',
      input: z.object({}),
      run: async (_args, { signal }) => {
        await sleep(TOOL_MS, signal);
        return { content: JSON.stringify({ found: true }), changed: true };
      },
    }),
  ],
  effects: [postSummary],
  decide: (answer, { run }) => ({ summary: answer.summary, effects: [{ effect: 'post_summary', args: { text: `Ticket ${run.wakeKey}: ${answer.summary}` } }] }),
});
