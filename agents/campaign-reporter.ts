import { z } from 'zod';
import { http } from '../activities/http';
import { defineAgent } from './definition';

const Dashboards = z.array(z.string().min(1).max(64)).min(1).max(10);

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
    '{"decision":"commit"|"no_op","summary":"..."}: no_op when no dashboard changed.',
  model: { maxOutputTokens: 300, inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 },
  budget: { turns: 6, tokens: 40_000, toolCalls: 12, wallClock: '6h', costUsd: 0.5 },
  tools: [
    {
      name: 'read_dashboard',
      description: 'Read one dashboard of the campaign (JSON metrics).',
      run: async ({ input, outside, signal }) => {
        const name = input.item ?? 'overview';
        const res = await http({
          method: 'GET',
          url: `${outside.dashboardUrl}/campaigns/${encodeURIComponent(input.wakeKey)}/dashboards/${encodeURIComponent(name)}`,
          timeoutMs: outside.httpTimeoutMs,
          signal,
        });
        const d = res.json as { changed: boolean; metrics: Record<string, number> };
        const headline = `${name}: ${Object.entries(d.metrics).map(([k, v]) => `${k} ${v}`).join(', ')}`;
        return { content: JSON.stringify({ dashboard: name, changed: d.changed, headline, metrics: d.metrics }), changed: d.changed };
      },
    },
  ],
  subagents: { over: 'dashboards', tool: 'read_dashboard', grant: { turns: 1, tokens: 6_000, toolCalls: 1, costUsd: 0.05 } },
  effects: [
    {
      name: 'post_summary',
      kind: 'channel_post',
      class: 'provider_key',
      reversible: true,
      description: 'Post the summary to the channel.',
      request: ({ input, final }) => ({ kind: 'channel_post', text: `Campaign ${input.wakeKey}: ${final?.summary ?? ''}` }),
    },
    {
      name: 'start_export',
      kind: 'export_start',
      class: 'reconcile',
      reversible: false,
      description: 'Start the downstream export of the campaign.',
      request: ({ input }) => ({ kind: 'export_start', campaign: input.wakeKey }),
    },
  ],
  approval: { irreversible: 'required', timeout: '4h' },
});
