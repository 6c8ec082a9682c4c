import { z } from 'zod';
import { sleep } from '@temporalio/activity';
import { defineAgent, defineTool } from './definition';

/**
 * The diagnostic agent behind `ping` and the heartbeat schedule: records the event it was woken for
 * (with the worker that ran it), holds for `holdMs` if asked (heartbeating, cancellable, resuming
 * from its last progress on a retry) and ends `success`. An ordinary agent without a model: its run
 * is its two steps.
 */
export const canary = defineAgent({
  name: 'canary',
  description: 'Checks the path trigger -> gate -> run end to end: records the event, holds if asked.',
  triggers: ['ping', 'schedule'],
  wakeKey: (event) => event.entity,
  wakeKeyRationale: 'One wake per pinged entity: the canary has nothing to coalesce, every logical event is its own check.',
  payload: z
    .object({
      holdMs: z.number().int().min(0).max(3_600_000).optional(),
      note: z.string().max(500).optional(),
    })
    .passthrough(),
  budget: { turns: 1, tokens: 1, toolCalls: 2, wallClock: '3h', costUsd: 0.01 },
  tools: [
    defineTool({
      name: 'record',
      description: 'Record the event with the worker that ran it.',
      timeout: '30s',
      run: async (_args, { input, attempt }) => {
        const recorded = { runKey: input.runKey, worker: `pid:${process.pid}`, attempt };
        return { content: JSON.stringify(recorded), changed: true };
      },
    }),
    defineTool({
      name: 'hold',
      description: 'Wait holdMs, heartbeating every second; a retry resumes from the time already held.',
      timeout: '2h',
      run: async (_args, { input, resumeFrom, progress }) => {
        const holdMs = typeof input.payload.holdMs === 'number' ? input.payload.holdMs : 0;
        let held = Number(resumeFrom ?? 0) || 0;
        while (held < holdMs) {
          const step = Math.min(1000, holdMs - held);
          await sleep(step); // rejects when the activity is cancelled (kill, cancel, shutdown)
          held += step;
          progress(held);
        }
        return { content: JSON.stringify({ heldMs: held }), changed: held > 0 };
      },
    }),
  ],
  steps: ['record', 'hold'],
  approval: { irreversible: 'auto', timeout: '1h' },
});
