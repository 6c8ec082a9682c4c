import { defineAgent } from './definition';

/**
 * The seed's reporting agent: reads a campaign's dashboards (one subagent each, in parallel, drawing
 * from the run's budget), posts a short summary to a channel, and starts the downstream export that
 * must happen only once. Woken by `campaigns` events (config changes, scheduled reports).
 */
export const campaignReporter = defineAgent({
  name: 'campaign-reporter',
  description: 'Reads campaign dashboards, posts a summary to the team channel, starts the campaign export once.',
  triggers: ['campaigns'],
  systemPrompt:
    'You report on one advertising campaign. Read every dashboard you are given, then answer with JSON ' +
    '{"decision":"commit"|"no_op","summary":"..."}: no_op when no dashboard changed.',
  model: { maxOutputTokens: 300, inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 },
  budget: { turns: 6, tokens: 40_000, toolCalls: 12, wallClock: '6h', costUsd: 0.5 },
  tools: [{ name: 'read_dashboard', kind: 'dashboard_read', description: 'Read one dashboard of the campaign (JSON metrics).' }],
  subagents: { over: 'dashboards', tool: 'read_dashboard', grant: { turns: 1, tokens: 6_000, toolCalls: 1, costUsd: 0.05 } },
  effects: [
    { name: 'post_summary', kind: 'channel_post', class: 'provider_key', reversible: true, description: 'Post the summary to the channel.' },
    { name: 'start_export', kind: 'export_start', class: 'reconcile', reversible: false, description: 'Start the downstream export of the campaign.' },
  ],
  approval: { irreversible: 'required', timeout: '4h' },
});
