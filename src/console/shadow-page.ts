import type { Client } from '@temporalio/client';
import escapeHtml from 'escape-html';
import type { FastifyInstance } from 'fastify';
import type { AgentRegistry } from '../agents/registry';
import { Duration } from '../core/parse';
import { liveShadowReport, type LiveShadowReport } from '../shadow/report';
import type { RunDiff } from '../shadow/diff';

/*
 * `GET /shadow/<agent>` on the operator's listener: what `wakegate shadow report` prints, for a
 * person: the live shadows of an agent in a window, a chart of how their wakes came out, the sums,
 * and each changed wake with its effect changes. Plain inline SVG, as the supervisor's page draws
 * (src/console/supervisor-charts.ts); every label escaped, every mark carrying its figures.
 */

const e = (v: unknown) => escapeHtml(String(v ?? ''));
const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:1200px;color:#1b1b1b}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem}code{font-size:.85rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.muted{color:#57606a}.flash{padding:.5rem .8rem;border-radius:.3rem;margin:.8rem 0;background:#fbe4e2}`;

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${e(title)}</title><style>${STYLE}</style></head><body>\n${body}\n</body></html>`;

/** How each live shadow came out, in the order the chart stacks them, with its colour. */
export const SHADOW_OUTCOMES = [
  { key: 'unchanged', label: 'same effects and reason', colour: '#2da44e' },
  { key: 'changedEffects', label: 'effects changed', colour: '#bf8700' },
  { key: 'changedReason', label: 'terminal reason changed', colour: '#cf222e' },
  { key: 'refused', label: 'refused by the shadow caps', colour: '#8c959f' },
  { key: 'failed', label: 'failed', colour: '#6e40c9' },
] as const;

/** The count of each outcome: a wake whose reason changed counts there, else where its effects changed, else unchanged. */
export function outcomeCounts(r: LiveShadowReport): Record<(typeof SHADOW_OUTCOMES)[number]['key'], number> {
  const reason = r.wakes.filter((w) => w.terminalReason.changed).length;
  const effects = r.wakes.filter((w) => !w.terminalReason.changed && w.effects.length > 0).length;
  return {
    unchanged: r.wakes.length - reason - effects,
    changedEffects: effects,
    changedReason: reason,
    refused: r.refused.length,
    failed: r.failed.length,
  };
}

const W = 600;
const H = 28;

/** One stacked bar: each outcome's share of the live shadows, with its count. */
export function outcomeChart(r: LiveShadowReport): string {
  const counts = outcomeCounts(r);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  let x = 0;
  const marks = SHADOW_OUTCOMES.filter((o) => counts[o.key] > 0).map((o) => {
    const w = (counts[o.key] / total) * W;
    const mark = `<rect x="${x.toFixed(1)}" y="0" width="${w.toFixed(1)}" height="${H}" fill="${o.colour}" data-outcome="${o.key}" data-count="${counts[o.key]}"><title>${e(o.label)}: ${counts[o.key]}</title></rect>`;
    x += w;
    return mark;
  });
  const legend = SHADOW_OUTCOMES.map(
    (o) => `<span style="display:inline-block;width:.8em;height:.8em;background:${o.colour}"></span> ${e(o.label)} <b>${counts[o.key]}</b>`,
  ).join(' &nbsp; ');
  return `<svg role="img" aria-label="live shadows by outcome" data-testid="outcomes" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${marks.join('')}</svg><p>${legend}</p>`;
}

function wakeRow(w: RunDiff): string {
  const effects = w.effects
    .map((c) =>
      c.change === 'args'
        ? c.args.map((a) => `${e(c.effect)}@${c.step} <code>${e(a.path)}</code>: ${e(JSON.stringify(a.before))} → ${e(JSON.stringify(a.after))}`).join('<br>')
        : `${c.change === 'added' ? '+' : '−'} ${e(c.effect)}@${c.step} <code>${e(JSON.stringify(c.args))}</code>`,
    )
    .join('<br>');
  return `<tr data-wake="${e(w.runKey)}"><td><a href="/wakes/${encodeURIComponent(w.runKey.split(/[@#]/)[0] ?? '')}/${encodeURIComponent(w.wakeKey)}"><code>${e(w.wakeKey)}</code></a></td>
<td>${e(w.terminalReason.before)} → ${e(w.terminalReason.after)}</td><td>${e(w.tokens.before)} → ${e(w.tokens.after)}</td><td>${effects || '<span class="muted">same</span>'}</td></tr>`;
}

/** The page for one agent's live shadows. */
export function renderShadowPage(agent: string, sample: number | undefined, since: string, r: LiveShadowReport): string {
  const s = r.summary;
  const changed = r.wakes.filter((w) => w.effects.length || w.terminalReason.changed || w.answer.changed);
  return page(
    `wakegate · live shadows of ${agent}`,
    `<h1>Live shadows of <code>${e(agent)}</code></h1>
<p class="muted">${sample === undefined ? 'no shadow option now' : `sample ${e(sample)}`} · since ${e(since)} · <a href="/supervisor">supervisor</a> (scope <code>~shadow</code>: the shadow caps)</p>
<form method="get"><label>Since (24h, 7d) <input name="since" value="${e(since)}"></label> <button type="submit">Show</button></form>
${outcomeChart(r)}
<table data-testid="sums"><tbody>
<tr><th>wakes diffed</th><td>${s.wakes}</td><th>effects changed</th><td>${s.changedEffects}</td><th>reason changed</th><td>${s.changedReason}</td><th>new escalations</th><td>${s.newEscalations}</td></tr>
<tr><th>tokens</th><td colspan="3">${s.tokens.before} → ${s.tokens.after} (${s.tokens.delta >= 0 ? '+' : ''}${s.tokens.delta})</td><th>cost</th><td colspan="3">$${s.costUsd.before} → $${s.costUsd.after}</td></tr>
</tbody></table>
<h2>Changed wakes (${changed.length})</h2>
<table data-testid="changed"><thead><tr><th>wake</th><th>reason</th><th>tokens</th><th>effects</th></tr></thead><tbody>${changed.map(wakeRow).join('')}</tbody></table>
${r.failed.length ? `<h2>Failed</h2><ul>${r.failed.map((f) => `<li><code>${e(f.shadowRunKey)}</code>: ${e(f.error)}</li>`).join('')}</ul>` : ''}`,
  );
}

/**
 * `GET /shadow/<agent>?since=7d` on the operator's listener (behind its sign-in): the agent's live
 * shadows diffed, read-only. An unknown agent is a 404 naming the known ones; a bad `since` a 400.
 */
export function registerShadowPage(app: FastifyInstance, opts: { client: Client; agents: AgentRegistry }): void {
  app.get<{ Params: { agent: string }; Querystring: { since?: string } }>('/shadow/:agent', async (request, reply) => {
    const { agent } = request.params;
    const html = (status: number, body: string) => reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);
    const def = opts.agents[agent];
    if (!def) return html(404, page('wakegate · not found', `<p class="flash">no agent "${e(agent)}": ${e(Object.keys(opts.agents).join(', '))}</p>`));
    const since = request.query?.since ?? '7d';
    const ms = Duration('since', 60_000).safeParse(since);
    if (!ms.success)
      return html(400, page('wakegate · bad request', `<p class="flash">${e(ms.error.issues[0]?.message ?? 'since is a duration: 24h, 7d')}</p>`));
    const report = await liveShadowReport(opts.client, { agent, since: new Date(Date.now() - ms.data), limit: 500 });
    return html(200, renderShadowPage(agent, def.shadow?.sample, since, report));
  });
}
