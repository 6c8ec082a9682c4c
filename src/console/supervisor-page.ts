import type { Client } from '@temporalio/client';
import escapeHtml from 'escape-html';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { errorBody } from '../core/error-body';
import { formToken, requireFormProof, type Acting } from './operator-auth';
import type { SupervisorPolicy } from '../core/supervisor-types';
import { actOnSupervisor, type PersonRequest } from '../supervisor/actions';
import { supervisorView, type SupervisorView } from '../supervisor/view';
import type { CounterView, SupervisorStatus, Trip } from '../core/supervisor-types';
import { counterChart, durationLabel as seconds, stormChart } from './supervisor-charts';
import { untraced } from '../tracing/spans';

const e = (v: unknown) => escapeHtml(String(v ?? ''));

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:1100px;color:#1b1b1b}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:1.6rem}
.mode{display:inline-block;padding:.2rem .7rem;border-radius:.3rem;font-weight:700;color:#fff}
.armed{background:#23733a}.halted{background:#b3261e}.draining{background:#a15c00}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.over{color:#b3261e;font-weight:700}.flash{padding:.5rem .8rem;border-radius:.3rem;margin:.8rem 0}
.ok{background:#e3f3e6}.err{background:#fbe4e2}form{display:flex;gap:.5rem;flex-wrap:wrap;align-items:end;margin:.4rem 0}
label{display:flex;flex-direction:column;font-size:.85rem}input,select{font:inherit;padding:.25rem}
.charts{display:flex;flex-wrap:wrap;gap:1rem 1.5rem}figure{margin:0}figcaption{font-size:.85rem;font-weight:600}svg.chart{display:block}
`;

function counterRow(c: CounterView, atMs: number | undefined): string {
  const over = c.value >= c.limit;
  return `<tr data-counter="${e(c.name)}|${e(c.scope)}"><td>${e(c.name)}</td><td>${e(c.scope === '*' ? 'fleet' : c.scope)}</td><td>${e(seconds(c.windowMs))}</td>
<td class="${over ? 'over' : ''}">${e(c.value)} / ${e(c.limit)}</td><td>${atMs === undefined ? '' : counterChart(c, atMs)}</td><td>${e(c.rationale)}</td></tr>`;
}

/** The wakes per minute of the fleet and of each agent, each beside its storm threshold; nothing when the status carries none. */
function stormCharts(s: SupervisorStatus | undefined): string {
  if (!s?.wakesPerMinute) return '';
  const { storm } = s.policy;
  const figures = Object.entries(s.wakesPerMinute).map(
    ([scope, minutes]) =>
      `<figure data-storm="${e(scope)}"><figcaption>${scope === '*' ? 'the fleet' : e(scope)}</figcaption>${stormChart(scope, minutes, scope === '*' ? storm.fleetPerMinute : storm.agentPerMinute)}</figure>`,
  );
  return `<h2>Wakes per minute</h2>
<p>Wakes that started a run at the gate in each of the last ${e(Object.values(s.wakesPerMinute)[0]?.length ?? 0)} minutes (the current one still filling), against the storm threshold. The breaker counts a sliding minute: it can trip with no minute over the line.</p>
<div class="charts">${figures.join('')}</div>`;
}

function tripBlock(t: Trip | undefined): string {
  if (!t) return '<p data-testid="trip">No trip: the breaker is armed.</p>';
  const page = t.page
    ? 'error' in t.page
      ? `page failed: ${e(t.page.error)}${t.page.resendAt ? ` (sent again at ${e(t.page.resendAt)} while the trip stands)` : ''}`
      : `paged (${e(t.page.status)}, ${e(t.page.dedupKey)})`
    : t.kind === 'storm' || t.kind === 'error_rate'
      ? 'paging…'
      : 'a person’s action: not paged';
  return `<p data-testid="trip">Trip #${e(t.id)} (${e(t.kind)}) at ${e(t.at)}: <strong>${e(t.reason)}</strong>. ${page}.</p>`;
}

/** Who the page is for: a signed-in operator (forms carry its CSRF token, the audit records its name) or an open loopback listener (forms ask for a name). */
export type PageSession = { operator: string; csrf: string } | undefined;

function personForm(session: PageSession, action: string, label: string, extra = ''): string {
  const who = session ? `<input type="hidden" name="_csrf" value="${e(session.csrf)}">` : '<label>Your name<input name="who" required maxlength="100"></label>';
  return `<form method="post" action="/supervisor/${action}" data-form="${action}">${who}
<label>Reason<input name="reason" required maxlength="500" size="40"></label>${extra}
<button type="submit">${e(label)}</button></form>`;
}

/**
 * The body of a form post or a script's action (form fields or JSON): `reason` (at most 500
 * characters; an empty one is refused by the supervisor), `who` on an open listener (at most 100),
 * and for a release the `agent` and `action` (`release` or `discard`). Anything else: 400 naming the field.
 */
export const ActionBody = z.object({
  who: z.string().max(100).optional(),
  reason: z.string().max(500).optional(),
  agent: z.string().max(200).optional(),
  action: z.enum(['release', 'discard']).optional(),
  _csrf: z.string().max(200).optional(),
});

/** The page: breaker state, why it tripped, counters against caps, held wakes, live runs, recent runs by reason, and the forms. */
export function renderSupervisorPage(view: SupervisorView, flash?: { ok: boolean; text: string }, session?: PageSession): string {
  const s = view.status;
  const mode = s?.mode ?? view.memo?.mode ?? 'armed';
  const agents = Object.keys(view.held.byAgent);
  const heldRows = Object.entries(view.held.byAgent)
    .flatMap(([agent, keys]) =>
      Object.entries(keys).map(
        ([key, wakes]) =>
          `<tr data-held="${e(agent)}|${e(key)}"><td>${e(agent)}</td><td>${e(key)}</td><td>${wakes.length}</td><td>${wakes
            .slice(0, 5)
            .map((w) => `${e(w.workflowId)} (${e(w.hold)}, since ${e(w.since)})`)
            .join('<br>')}${wakes.length > 5 ? '<br>…' : ''}</td></tr>`,
      ),
    )
    .join('');
  const reasons = Object.entries(s?.recentRuns ?? {})
    .map(([r, n]) => `<tr data-reason="${e(r)}"><td>${e(r)}</td><td>${n}</td></tr>`)
    .join('');
  const agentSelect = `<label>Agent<select name="agent"><option value="">all agents</option>${agents.map((a) => `<option>${e(a)}</option>`).join('')}</select></label>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>wakegate supervisor: ${e(mode)}</title><style>${STYLE}</style></head><body>
<h1>wakegate supervisor <small>${e(view.supervisorId)}</small></h1>
${
  session
    ? `<form method="post" action="/logout" data-form="logout">Signed in as <strong data-testid="operator">${e(session.operator)}</strong><input type="hidden" name="_csrf" value="${e(session.csrf)}"><button type="submit">Sign out</button></form>`
    : '<p data-testid="operator">No sign-in on this listener (loopback only): actions record the name you type.</p>'
}
${flash ? `<div class="flash ${flash.ok ? 'ok' : 'err'}" data-testid="flash">${e(flash.text)}</div>` : ''}
<p>Breaker: <span class="mode ${e(mode)}" data-testid="mode">${e(mode)}</span>
 · live runs <strong data-testid="live">${view.live}</strong> · held wakes <strong data-testid="held-total">${view.held.total}</strong>
 · <a href="/supervisor">refresh</a></p>
${view.statusError ? `<p class="flash err">${e(view.statusError)}</p>` : ''}
${tripBlock(s?.trip)}
${mode !== 'armed' ? `<h2>Reset the breaker</h2><p>A halt does not clear itself: reset it once you have looked. Held wakes stay held until released.</p>${personForm(session, 'reset', 'Reset')}` : ''}
<h2>Held wakes</h2>
${
  view.held.total
    ? `<table><thead><tr><th>agent</th><th>wake key</th><th>held</th><th>runs</th></tr></thead><tbody>${heldRows}</tbody></table>
${personForm(session, 'release', 'Release or discard', `${agentSelect}<label>Action<select name="action"><option value="release">release: run them (once)</option><option value="discard">discard them</option></select></label>`)}`
    : '<p>None.</p>'
}
${stormCharts(s)}
<h2>Counters against caps</h2>
<table><thead><tr><th>counter</th><th>scope</th><th>window</th><th>value / limit</th><th>its window, bucket by bucket; how full</th><th>why this limit</th></tr></thead><tbody>${(s?.counters ?? []).map((c) => counterRow(c, s?.atMs)).join('')}</tbody></table>
<h2>Recent runs by terminal reason</h2>
<p data-testid="observed">Closed runs last read ${e(s?.lastObservedAt ?? 'never')} (the error-rate window: ${e(seconds(s?.policy.errorRate.windowMs ?? 0))}).</p>
${s?.visibilityError ? `<p class="flash" data-testid="visibility-error">${e(s.visibilityError.at)}: ${e(s.visibilityError.message)}${s.visibilityError.unavailable ? ' (the error-rate breaker and spend caps are blind on this server)' : ''}</p>` : ''}
${reasons ? `<table><tbody>${reasons}</tbody></table>` : '<p>None closed in the error-rate window.</p>'}
<h2>Resets</h2>
${(s?.resets ?? []).length ? `<table><tbody>${s!.resets.map((r) => `<tr data-reset><td>${e(r.at)}</td><td>trip #${e(r.tripId)}</td><td>${e(r.who)}</td><td>${e(r.reason)}</td></tr>`).join('')}</tbody></table>` : '<p>None.</p>'}
<h2>Releases and discards</h2>
${(s?.releases ?? []).length ? `<table><tbody>${s!.releases.map((r) => `<tr><td>${e(r.at)}</td><td>${e(r.action)}</td><td>${e(r.agent ?? 'all')}</td><td>${e(r.who)}</td><td>${e(r.reason)}</td></tr>`).join('')}</tbody></table>` : '<p>None.</p>'}
${mode === 'armed' ? `<h2>Halt or drain</h2>${personForm(session, 'halt', 'Halt: cancel live runs')}${personForm(session, 'drain', 'Drain: let live runs finish')}` : ''}
</body></html>`;
}

/**
 * `/supervisor` on the operator's listener: the page above and its forms (`POST /supervisor/reset`,
 * `/release`, `/halt`, `/drain`), each needing a reason. Registered in the scope that
 * `registerOperatorAuth` guards, so every request here acts as someone (or the listener is open on
 * loopback); a form post must also pass `requireFormProof` (origin, and in a session the CSRF token).
 * The audit records the signed-in operator; on an open listener, the typed name marked as not signed in.
 * The answer redirects back with what happened.
 */
export function registerSupervisorPage(app: FastifyInstance, opts: { client: Client; taskQueue: string; policy?: SupervisorPolicy }): void {
  app.get<{ Querystring: { ok?: string; error?: string } }>('/supervisor', async (request, reply) => {
    const q = request.query ?? {};
    const flash = q.ok ? { ok: true, text: q.ok } : q.error ? { ok: false, text: q.error } : undefined;
    // The supervisor's traffic is not traced (it belongs to no wake): no stray trace per page view.
    const view = await untraced(() => supervisorView(opts.client, opts.taskQueue));
    const acting = request.acting;
    const csrf = formToken(request, reply);
    const session = acting && acting.via !== 'open' && csrf ? { operator: acting.name, csrf } : undefined;
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(renderSupervisorPage(view, flash, session));
  });
  app.post<{ Params: { action: string } }>('/supervisor/:action', { preHandler: requireFormProof(app) }, async (request, reply) => {
    const back = (key: 'ok' | 'error', text: string) => reply.redirect(`/supervisor?${key}=${encodeURIComponent(text)}`, 303);
    const action = request.params.action;
    if (!['reset', 'release', 'halt', 'drain'].includes(action)) return reply.code(404).send({ error: { code: 'not_found', message: `no action ${action}` } });
    const parsed = ActionBody.safeParse(request.body ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
      return reply.code(400).send(errorBody('invalid_body', issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues));
    }
    const body = parsed.data;
    const who = actingName(request.acting, body.who);
    const reason = body.reason ?? '';
    const req: PersonRequest =
      action === 'release'
        ? { kind: body.action === 'discard' ? 'discard' : 'release', who, reason, ...(body.agent ? { agent: body.agent } : {}) }
        : { kind: action as 'reset' | 'halt' | 'drain', who, reason };
    const r = await untraced(() => actOnSupervisor(opts.client, opts.taskQueue, req, opts.policy));
    if (!r.ok) return back('error', `refused: ${r.message}`);
    const done =
      req.kind === 'reset'
        ? `reset by ${who}: the breaker is armed; held wakes stay held until released`
        : req.kind === 'release' || req.kind === 'discard'
          ? `${req.kind}d ${req.agent ? `${req.agent}'s` : 'all'} held wakes (${who})`
          : `${req.kind === 'halt' ? 'halted' : 'draining'} (${who})`;
    return back('ok', done);
  });
}

/** The name an action is recorded under: the authenticated operator; on an open listener the typed one, marked (empty stays empty, and is refused). */
export function actingName(acting: Acting | undefined, typed: string | undefined): string {
  if (acting && acting.via !== 'open') return acting.name;
  const name = (typed ?? '').trim();
  return name ? `${name} (not signed in)` : '';
}
