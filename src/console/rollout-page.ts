import type { Client } from '@temporalio/client';
import escapeHtml from 'escape-html';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AgentRegistry } from '../agents/registry';
import type { RolloutEntry, RolloutStatus, RolloutView } from '../core/rollout';
import { listRollouts, rolloutStatus } from '../rollout/actions';
import { sideBySide } from '../rollout/figures';

/*
 * `GET /rollouts` and `GET /rollouts/<agent>` on the operator's listener: each agent's rollout, and
 * one rollout's phase, share, the two versions' figures side by side over its latest evidence with
 * each check's verdict, and its history. Read-only (a person acts with `wakegate rollout`); every
 * value escaped.
 */

const e = (v: unknown) => escapeHtml(String(v ?? ''));
const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:1200px;color:#1b1b1b}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem}code{font-size:.85rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.muted{color:#57606a}.flash{padding:.5rem .8rem;border-radius:.3rem;margin:.8rem 0;background:#fbe4e2}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:600}.waiting{color:#57606a}`;

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${e(title)}</title><style>${STYLE}</style></head><body>\n${body}\n</body></html>`;

const pct = (share: number) => `${Math.round(share * 1000) / 10}%`;

/** A rollout's view in a few words. */
export function describeView(v: RolloutView): string {
  switch (v.phase) {
    case 'idle':
      return `no rollout: every wake runs ${v.current}`;
    case 'ramping':
      return `ramping ${v.candidate ?? '?'} at ${pct(v.share)} of wake keys (current ${v.current})`;
    case 'promoted':
      return `${v.candidate ?? '?'} promoted: every new wake runs it`;
    case 'rolled_back':
      return `${v.candidate ?? '?'} rolled back: every new wake runs ${v.current}`;
  }
}

const entryRow = (h: RolloutEntry) =>
  `<tr data-entry="${e(h.id)}"><td>#${e(h.id)}</td><td>${e(h.at)}</td><td>${e(h.kind)}</td><td>${e(h.candidate)} at ${e(pct(h.share))}</td><td>${e(h.who)}</td><td>${e(h.reason)}${
    h.stopped ? ' <span class="muted">(runs in flight stopped)</span>' : ''
  }${h.paged ? ` <span class="muted">(paged: <code>${e(h.paged)}</code>)</span>` : ''}</td></tr>`;

/** The page of one agent's rollout. */
export function renderRolloutPage(agent: string, status: RolloutStatus): string {
  const { state } = status;
  const f = sideBySide(status);
  const figures = f.rows.length
    ? `<p class="muted">runs closed since ${e(f.since)}, read at ${e(f.at)}${f.held ? ' · taken while the fleet was held: kept, not acted on' : ''}</p>
<table data-testid="figures"><thead><tr><th></th><th>current <code>${e(f.current)}</code></th><th>candidate <code>${e(f.candidate)}</code></th></tr></thead><tbody>${f.rows
        .map((r) => `<tr><th>${e(r.label)}</th><td>${e(r.current)}</td><td>${e(r.candidate)}</td></tr>`)
        .join('')}</tbody></table>`
    : '<p class="muted">no evidence taken yet</p>';
  const checks = f.checks.length
    ? f.checks
        .map(
          (c) =>
            `<tr data-check="${e(c.name)}"><td><code>${e(c.name)}</code></td><td>${e(c.metric)}</td><td class="${e(c.status)}">${e(c.status)}</td><td>${e(c.why)}</td></tr>`,
        )
        .join('')
    : state.checks
        .map(
          (c) =>
            `<tr data-check="${e(c.name)}"><td><code>${e(c.name)}</code></td><td>${e(c.metric)}</td><td class="waiting">waiting</td><td>no evidence yet</td></tr>`,
        )
        .join('');
  const history = [...state.history].reverse();
  return page(
    `wakegate · rollout of ${agent}`,
    `<h1>Rollout of <code>${e(agent)}</code></h1>
<p data-testid="phase"><b>${e(state.phase)}</b> · ${e(describeView(status.view))}</p>
<p class="muted">rollout #${e(state.rollouts)} · share ${e(pct(state.share))} · a promote needs ${e(state.minRuns)} candidate runs in this step's window · fleet ${e(state.fleet)}${
      state.fleet !== 'armed' ? ' (the rollout is held)' : ''
    } · evidence every ${e(Math.round(status.everyMs / 1000))} s while ramping · <a href="/rollouts">all rollouts</a> · <a href="/supervisor">supervisor</a></p>
<h2>Figures</h2>
${figures}
<h2>Checks</h2>
<table data-testid="checks"><thead><tr><th>check</th><th>metric</th><th>verdict</th><th>why</th></tr></thead><tbody>${checks}</tbody></table>
<h2>History (${state.history.length})</h2>
<table data-testid="history"><thead><tr><th></th><th>at</th><th>move</th><th>candidate</th><th>who</th><th>why</th></tr></thead><tbody>${history.map(entryRow).join('')}</tbody></table>`,
  );
}

/** The list of the task queue's rollouts. */
export function renderRolloutList(taskQueue: string, rollouts: { agent: string; view?: RolloutView }[]): string {
  const rows = rollouts
    .map(
      (r) =>
        `<tr data-agent="${e(r.agent)}"><td><a href="/rollouts/${encodeURIComponent(r.agent)}"><code>${e(r.agent)}</code></a></td><td>${e(r.view?.phase ?? '?')}</td><td>${e(
          r.view ? describeView(r.view) : 'no view published yet',
        )}</td></tr>`,
    )
    .join('');
  return page(
    'wakegate · rollouts',
    `<h1>Rollouts on <code>${e(taskQueue)}</code></h1>
${rollouts.length ? `<table data-testid="rollouts"><thead><tr><th>agent</th><th>phase</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">no rollout: every wake runs its agent\'s current version (<code>wakegate rollout &lt;agent&gt; start</code>)</p>'}`,
  );
}

/**
 * `GET /rollouts` and `GET /rollouts/<agent>` (behind the sign-in), read-only. An unknown agent is
 * a 404 naming the known ones; an agent with no rollout a 404 saying how to start one.
 */
export function registerRolloutPage(app: FastifyInstance, opts: { client: Client; taskQueue: string; agents: AgentRegistry }): void {
  const html = (reply: FastifyReply, status: number, body: string) =>
    reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);
  app.get('/rollouts', async (_request, reply) => html(reply, 200, renderRolloutList(opts.taskQueue, await listRollouts(opts.client, opts.taskQueue))));
  app.get<{ Params: { agent: string } }>('/rollouts/:agent', async (request, reply) => {
    const { agent } = request.params;
    if (!opts.agents[agent])
      return html(reply, 404, page('wakegate · not found', `<p class="flash">no agent "${e(agent)}": ${e(Object.keys(opts.agents).join(', '))}</p>`));
    const status = await rolloutStatus(opts.client, opts.taskQueue, agent);
    if (!status)
      return html(
        reply,
        404,
        page('wakegate · no rollout', `<p class="flash">${e(agent)} has no rollout: <code>wakegate rollout ${e(agent)} start --candidate …</code></p>`),
      );
    return html(reply, 200, renderRolloutPage(agent, status));
  });
}
