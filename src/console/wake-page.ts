import type { Client } from '@temporalio/client';
import escapeHtml from 'escape-html';
import type { FastifyInstance } from 'fastify';
import type { AgentRegistry } from '../agents/registry';
import { deliveriesText } from '../core/delivery-ids';
import { budgetUsed } from '../trail/format';
import { TRAIL_DEFAULTS, TrailRequestError, wakeTrail } from '../trail/trail';
import type { TrailRun, WakeTrail } from '../trail/types';
import { DECISION_COLOURS, timelineSvg } from './wake-timeline';

const e = (v: unknown) => escapeHtml(String(v ?? ''));

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:1200px;color:#1b1b1b}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem}code{font-size:.85rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.decision{font-weight:700}.muted{color:#57606a}.flash{padding:.5rem .8rem;border-radius:.3rem;margin:.8rem 0;background:#fbe4e2}
form{display:flex;gap:.5rem;align-items:end}label{display:flex;flex-direction:column;font-size:.85rem}input{font:inherit;padding:.25rem}
`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${e(title)}</title><style>${STYLE}</style></head><body>
${body}
</body></html>`;
}

function runRow(r: TrailRun): string {
  const effects = r.effects.length
    ? `<table><tbody>${r.effects
        .map(
          (f) =>
            `<tr data-effect="${e(f.effectKey)}"><td>${e(f.effect)}</td><td>${e(f.class ?? '?')}</td><td data-outcome>${e(f.outcome)}${f.ref ? ` (${e(f.ref)})` : ''}</td>` +
            `<td>args <code>${e(f.argsDigest ?? '?')}</code></td><td>${f.approval.required ? `approval: ${e(f.approval.decision ?? 'required')}${f.approval.who ? ` by ${e(f.approval.who)}` : ''}` : 'no approval needed'}</td>` +
            `<td><code>${e(f.effectKey)}</code></td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<span class="muted">no effect</span>';
  const budget = budgetUsed(r);
  const notes = [
    r.held ? `held (${e(r.held.hold)}): ${e(r.held.reason)}${r.held.releasedBy ? `; released by ${e(r.held.releasedBy.who)}` : ''}` : '',
    r.killedBy ? `killed by ${e(r.killedBy.who)}: ${e(r.killedBy.reason)}` : '',
    r.supersededBy ? `cancelled for a restart: ${e(r.supersededBy)}` : '',
    r.replay ? `a replay (epoch ${e(r.replay.epoch)}) of ${e(r.replay.of)}` : '',
    r.takenBy ? `the window had already run as ${e(r.takenBy)}` : '',
    r.summary ? e(r.summary) : '',
  ].filter(Boolean);
  return `<tr data-run="${e(r.runKey)}"><td><code>${e(r.runKey)}</code></td><td>${e(r.startedAt)}<br>${e(r.closedAt ?? 'open')}</td>
<td class="decision">${e(r.terminalReason ?? r.phase ?? r.status.toLowerCase())}${r.version ? `<br><span class="muted" data-version>version ${e(r.version)}</span>` : ''}</td>
<td>took ${e(r.absorbed.length + (r.absorbedOverflow ?? 0))}, skipped ${e(r.skipped.length)}<br>turns ${e(r.modelTurns)}, tool calls ${e(r.toolCalls)}, subagents ${e(r.subagents)}<br>${budget ? `budget used: ${e(budget)}` : 'no budget spent'}</td>
<td>${notes.join('<br>')}${effects}</td></tr>`;
}

/** The page of one wake key's trail: the timeline, then the events and runs in full, what is not recorded and where it looked. */
export function renderWakePage(t: WakeTrail, since: string = t.window.since): string {
  const header = `<h1>Why did <code>${e(t.agent)}</code> wake about <code>${e(t.wakeKey)}</code>?</h1>
<p class="muted">${e(t.path)} path · window ${e(t.window.since)} → ${e(t.window.until)} · <a href="/supervisor">supervisor</a></p>
<form method="get"><label>Since (24h, 30m, 7d or an ISO time)<input name="since" value="${e(since)}"></label><button type="submit">Show</button></form>`;
  const looked = `<h2>Looked at</h2><ul data-testid="looked">${t.looked.map((l) => `<li>${e(l)}</li>`).join('')}</ul>
<h2>Not recorded</h2><ul data-testid="not-recorded">${t.notRecorded.map((n) => `<li>${e(n)}</li>`).join('')}</ul>`;
  if (!t.found) {
    return page(
      `wakegate · ${t.agent} · ${t.wakeKey}`,
      `${header}<p class="flash" data-testid="nothing">Nothing is recorded about this wake key since ${e(t.window.since)}.</p>${looked}`,
    );
  }
  const events = t.events
    .map(
      (
        ev,
      ) => `<tr data-event="${e(ev.eventKey)}"><td>${e(ev.arrivedAt ?? '-')}</td><td>${e(ev.occurredAt)}</td><td>${e(ev.source)}</td><td>${e(ev.type)}</td><td>${e(ev.entity)}</td>
<td>${e(ev.version ?? '-')}</td><td><code>${e(ev.eventKey)}</code></td><td>${e(deliveriesText(ev, '\n')).replace(/\n/g, '<br>') || '-'}</td>
<td class="decision" data-decision="${e(ev.decision)}" style="color:${DECISION_COLOURS[ev.decision]}">${e(ev.decision)}</td><td>${e(ev.reason)}</td></tr>`,
    )
    .join('');
  return page(
    `wakegate · ${t.agent} · ${t.wakeKey}`,
    `${header}
${timelineSvg(t)}
<h2>Events (${e(t.events.length)}${t.eventsNotListed ? `, and ${e(t.eventsNotListed)} not listed` : ''})</h2>
<table data-testid="events"><thead><tr><th>arrived</th><th>occurred</th><th>source</th><th>type</th><th>entity</th><th>version</th><th>event key</th><th>deliveries</th><th>decision</th><th>why</th></tr></thead><tbody>${events}</tbody></table>
<h2>Runs (${e(t.runs.length)}${t.runsNotListed ? `, and ${e(t.runsNotListed)} not listed` : ''})</h2>
<table data-testid="runs"><thead><tr><th>run</th><th>started / closed</th><th>ended</th><th>work and budget</th><th>effects</th></tr></thead><tbody>${t.runs.map(runRow).join('')}</tbody></table>
${looked}`,
  );
}

/**
 * `GET /wakes/<agent>/<wakeKey>` on the operator's listener (`?since=24h`): the decision trail of
 * one wake key (src/trail/), read-only. Registered in the scope that `registerOperatorAuth` guards, like
 * the supervisor's page. An unknown agent is a 404 naming the known ones; a wake key with nothing
 * recorded in the window a 404 page that says where it looked; a bad `since` a 400.
 */
export function registerWakePage(app: FastifyInstance, opts: { client: Client; agents: AgentRegistry }): void {
  app.get<{ Params: { agent: string; '*': string }; Querystring: { since?: string } }>('/wakes/:agent/*', async (request, reply) => {
    const { agent } = request.params;
    const wakeKey = request.params['*'];
    const html = (status: number, body: string) => reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);
    try {
      const since = request.query?.since ?? TRAIL_DEFAULTS.since;
      const trail = await wakeTrail(opts.client, opts.agents, { agent, wakeKey, since });
      return html(trail.found ? 200 : 404, renderWakePage(trail, since));
    } catch (err) {
      if (!(err instanceof TrailRequestError)) throw err;
      const status = err.code === 'unknown_agent' ? 404 : 400;
      return html(status, page('wakegate · not found', `<h1>${e(err.code.replace(/_/g, ' '))}</h1><p class="flash" data-testid="error">${e(err.message)}</p>`));
    }
  });
}
