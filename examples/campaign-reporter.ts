import { z } from 'zod';
import { channelAdapter, defineAgent, defineEffect, defineTool, http, localExports } from 'wakegate';

const Dashboards = z.array(z.string().min(1).max(64)).min(1).max(10);

/** Post a summary to the team channel: the channel deduplicates by the effect key (`Idempotency-Key`). */
export const postSummary = defineEffect({
  name: 'post_summary',
  description: 'Post the summary to the channel.',
  class: 'provider_key',
  reversible: true,
  input: z.object({ text: z.string().min(1).max(4000) }),
  keyed: (outside) => channelAdapter(outside).keyed,
  apply: async ({ text }, { effectKey, outside, signal }) => {
    const m = await channelAdapter(outside).post(effectKey, text, signal);
    return { ref: m.ref, existed: m.replayed };
  },
});

/** Start the downstream export: the export service takes no key, but can be searched by the reference stored on each job. */
export const startExport = defineEffect({
  name: 'start_export',
  description: 'Start the downstream export of the campaign.',
  class: 'reconcile',
  reversible: false,
  input: z.object({ campaign: z.string().min(1).max(200) }),
  apply: async ({ campaign }, { effectKey, outside, signal }) => localExports(outside.exportUrl, outside.httpTimeoutMs).start(effectKey, campaign, signal),
  find: ({ effectKey, outside, signal }) => localExports(outside.exportUrl, outside.httpTimeoutMs).find(effectKey, signal),
});

/**
 * The seed's reporting agent: reads a campaign's dashboards (one subagent each, in parallel, drawing
 * from the run's budget), posts a short summary to a channel, and starts the downstream export that
 * must happen only once. Woken by campaign events (config changes, report requests) and by its
 * hourly schedule; every wake about one campaign reaches the same coalescer.
 */
export const campaignReporter = defineAgent({
  name: 'campaign-reporter',
  description: 'Reads campaign dashboards, posts a summary to the team channel, starts the campaign export once.',
  triggers: ['campaigns', 'schedule'],
  // A campaign event's entity is the campaign; any other trigger (a schedule tick, whose entity is the
  // schedule id) names the campaign in its payload.
  wakeKey: (event) => {
    const id = event.payload.campaignId ?? (event.source === 'campaigns' ? event.entity : undefined);
    if (typeof id !== 'string') throw new Error('payload.campaignId is required: it names the campaign this wake is about');
    return id;
  },
  wakeKeyRationale:
    'One wake per campaign: a config change, a scheduled report and a retried report about one campaign all ask for its report, ' +
    'so they collapse into one run; two campaigns never block each other.',
  coalesce: { debounce: { period: '10s', maxWait: '2m' }, whileRunning: 'skip' },
  payload: z.object({ dashboards: Dashboards.optional(), campaignId: z.string().min(1).max(200).optional() }).passthrough(),
  // Every dashboard any absorbed wake named, in order of first mention; the overview when none did.
  mergePayload: (events) => {
    const dashboards = [...new Set(events.flatMap((e) => (Array.isArray(e.payload.dashboards) ? (e.payload.dashboards as string[]) : [])))];
    return { ...events[events.length - 1]?.payload, dashboards: dashboards.length ? dashboards.slice(0, 10) : ['overview'] };
  },
  systemPrompt:
    'You report on one advertising campaign. Read every dashboard you are given, then answer with JSON ' +
    '{"conclusion":"commit"|"no_op","summary":"..."}: no_op when no dashboard changed.',
  model: { maxOutputTokens: 300, inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 },
  budget: { turns: 6, tokens: 40_000, toolCalls: 12, wallClock: '6h', costUsd: 0.5 },
  tools: [
    defineTool({
      name: 'read_dashboard',
      description: 'Read one dashboard of the campaign (JSON metrics).',
      run: async (_args, { input, outside, signal }) => {
        const name = input.item ?? 'overview';
        const res = await http({
          method: 'GET',
          url: `${outside.dashboardUrl}/campaigns/${encodeURIComponent(input.wakeKey)}/dashboards/${encodeURIComponent(name)}`,
          timeoutMs: outside.httpTimeoutMs,
          signal,
        });
        const d = res.json as { changed: boolean; metrics: Record<string, number> };
        const headline = `${name}: ${Object.entries(d.metrics)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`;
        return { content: JSON.stringify({ dashboard: name, changed: d.changed, headline, metrics: d.metrics }), changed: d.changed };
      },
    }),
  ],
  subagents: { over: 'dashboards', tool: 'read_dashboard', grant: { turns: 1, tokens: 6_000, toolCalls: 1, costUsd: 0.05 } },
  effects: [postSummary, startExport],
  // Code, not the model, picks the effects: a report posts its summary and starts the export.
  decide: (answer, { run }) =>
    answer.conclusion === 'no_op'
      ? { noOp: answer.summary }
      : {
          summary: answer.summary,
          effects: [
            { effect: 'post_summary', args: { text: `Campaign ${run.wakeKey}: ${answer.summary}` } },
            { effect: 'start_export', args: { campaign: run.wakeKey } },
          ],
        },
  approval: { irreversible: 'required', timeout: '4h' },
});
