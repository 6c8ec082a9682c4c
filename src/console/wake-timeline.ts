import escapeHtml from 'escape-html';
import type { TrailDecision, TrailEffect, TrailEvent, TrailRun, WakeTrail } from '../trail/types';
import { LANDED_OUTCOMES } from '../core/contracts';
import { deliveriesText } from '../core/delivery-ids';

/*
 * The trail drawn as one inline SVG, server-side: events as marks (one row each, at their arrival),
 * runs as bars (start to close; a pending batch dashed, an open run to now) and each run's effects
 * as points on the run's rows. Every label is escaped: event keys, delivery ids and payload-derived
 * names come from outside.
 */

const e = (v: unknown) => escapeHtml(String(v ?? ''));

export const DECISION_COLOURS: Record<TrailDecision, string> = {
  started: '#1f6feb',
  coalesced: '#2da44e',
  skipped: '#8c959f',
  steered: '#1a7f37',
  stale: '#bf8700',
  mismatch: '#cf222e',
  held: '#8250df',
  completed: '#57606a',
  accepted: '#0969da',
};

const REASON_COLOURS: Record<string, string> = {
  success: '#2da44e',
  no_op: '#8c959f',
  cancelled: '#bc4c00',
  discarded: '#bc4c00',
  duplicate: '#8c959f',
  skipped: '#8c959f',
  budget_exhausted: '#8250df',
  blocked: '#cf222e',
  escalated: '#cf222e',
  failed: '#cf222e',
};

const EFFECT_DONE = new Set<string>(LANDED_OUTCOMES);

const W = 1100;
const LABEL = 330;
const RIGHT = 250;
const ROW = 22;
const MAX_EVENT_ROWS = 60;

const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
/** A tick's label: to the second, or to the tenth of one when the whole span is under 10 s. */
const clock = (ms: number, fine: boolean) => new Date(ms).toISOString().slice(11, fine ? 21 : 19);

/** The time span drawn: every arrival, run and effect, padded a little on both sides. */
function span(t: WakeTrail, events: TrailEvent[], at: (ev: TrailEvent) => number | undefined): [number, number] {
  const until = Date.parse(t.window.until);
  const times = [
    ...events.map(at),
    ...t.runs.flatMap((r) => [Date.parse(r.startedAt), r.closedAt ? Date.parse(r.closedAt) : until]),
    ...t.runs.flatMap((r) => r.effects.map((f) => (f.at ? Date.parse(f.at) : undefined))),
  ].filter((x): x is number => x !== undefined && Number.isFinite(x));
  if (!times.length) return [until - 60_000, until];
  let lo = Math.min(...times);
  let hi = Math.max(...times);
  if (hi - lo < 2000) [lo, hi] = [lo - 1000, hi + 1000];
  const pad = (hi - lo) * 0.04;
  return [lo - pad, hi + pad];
}

function effectRow(f: TrailEffect, x: number, y: number): string {
  const colour = EFFECT_DONE.has(f.outcome) ? '#2da44e' : f.outcome === 'awaiting_approval' || f.outcome === 'in_flight' ? '#bf8700' : '#cf222e';
  const approval = f.approval.required ? ` · ${f.approval.decision ?? 'approval required'}${f.approval.who ? ` by ${f.approval.who}` : ''}` : '';
  return `<g class="effect" data-effect="${e(f.effectKey)}" data-outcome="${e(f.outcome)}">
<title>${e(`${f.effectKey}\nclass ${f.class ?? '?'} · args ${f.argsDigest ?? '?'} · ${f.outcome}${f.ref ? ` (${f.ref})` : ''}${approval}`)}</title>
<rect x="${x - 5}" y="${y - 5}" width="10" height="10" transform="rotate(45 ${x} ${y})" fill="${colour}"/>
<text x="${x + 10}" y="${y + 4}" class="small">${e(`${f.effect} · ${f.outcome}${approval}`)}</text></g>`;
}

function runRows(r: TrailRun, y0: number, x: (ms: number) => number, untilMs: number): { svg: string; height: number } {
  const start = x(Date.parse(r.startedAt));
  const end = Math.max(start + 3, x(r.closedAt ? Date.parse(r.closedAt) : untilMs));
  const pending = r.status === 'PENDING';
  const colour = pending ? '#54aeff' : r.status === 'RUNNING' ? '#0969da' : (REASON_COLOURS[r.terminalReason ?? 'failed'] ?? '#57606a');
  const state = pending ? 'pending' : r.status === 'RUNNING' ? `running${r.phase ? ` (${r.phase})` : ''}` : (r.terminalReason ?? r.status.toLowerCase());
  const label = r.runKey.includes('@') ? `run @${r.runKey.slice(r.runKey.indexOf('@') + 1)}` : `run ${r.runKey}`;
  const effects = r.effects.map((f, i) => effectRow(f, f.at ? x(Date.parse(f.at)) : end, y0 + ROW * (i + 1) + 4)).join('');
  const svg = `<g class="run" data-run="${e(r.runKey)}" data-status="${e(state)}">
<title>${e(`${r.runKey}\n${r.startedAt} → ${r.closedAt ?? 'open'} · ${state}\ntook ${r.absorbed.length} event(s), skipped ${r.skipped.length} · turns ${r.modelTurns} · tool calls ${r.toolCalls}${r.usage ? ` · tokens ${r.usage.tokens} · $${r.usage.costUsd}` : ''}`)}</title>
<text x="8" y="${y0 + 4}">${e(short(label, 46))}</text>
<rect x="${start}" y="${y0 - 7}" width="${end - start}" height="14" rx="3" fill="${colour}" fill-opacity="${pending ? 0.35 : 0.85}"${pending ? ` stroke="${colour}" stroke-dasharray="4 3"` : ''}/>
<text x="${W - RIGHT + 10}" y="${y0 + 4}">${e(state)}</text>${effects}</g>`;
  return { svg, height: ROW * (r.effects.length + 1) + 8 };
}

/** The trail's timeline: an SVG a person reads at a glance, with the details in each element's tooltip. */
export function timelineSvg(t: WakeTrail): string {
  const runs = new Map(t.runs.map((r) => [r.runKey, r]));
  const runStart = new Map(t.runs.map((r) => [r.runKey, Date.parse(r.startedAt)]));
  const at = (ev: TrailEvent) => (ev.arrivedAt ? Date.parse(ev.arrivedAt) : ev.runKey ? runStart.get(ev.runKey) : undefined);
  const events = t.events.slice(-MAX_EVENT_ROWS);
  const [lo, hi] = span(t, events, at);
  const x = (ms: number) => LABEL + ((ms - lo) / (hi - lo)) * (W - LABEL - RIGHT);
  const untilMs = Date.parse(t.window.until);
  const parts: string[] = [];
  let y = 40;
  parts.push(
    `<text x="8" y="${y - 14}" class="head">events${t.events.length > events.length ? ` (newest ${events.length} of ${t.events.length})` : ''}</text>`,
  );
  const eventY = new Map<string, number>();
  for (const ev of events) {
    const ms = at(ev);
    const cx = ms === undefined ? LABEL : x(ms);
    eventY.set(ev.eventKey, y);
    parts.push(`<g class="event" data-event="${e(ev.eventKey)}" data-decision="${e(ev.decision)}">
<title>${e(`${ev.source} ${ev.type} · ${ev.entity}\n${ev.eventKey}\noccurred ${ev.occurredAt} · arrived ${ev.arrivedAt ?? 'not recorded'}\ndeliveries ${deliveriesText(ev, ', ') || 'none'}\n${ev.reason}`)}</title>
<text x="8" y="${y + 4}">${e(short(`${ev.source} ${ev.type}${ev.version !== undefined ? ` v${ev.version}` : ''} · ${ev.entity}`, 48))}</text>
<circle cx="${cx}" cy="${y}" r="6" fill="${DECISION_COLOURS[ev.decision]}"/>
<text x="${W - RIGHT + 10}" y="${y + 4}" fill="${DECISION_COLOURS[ev.decision]}" font-weight="600">${e(ev.decision)}</text></g>`);
    y += ROW;
  }
  y += 24;
  parts.push(`<text x="8" y="${y - 14}" class="head">runs</text>`);
  const runY = new Map<string, number>();
  for (const r of t.runs) {
    runY.set(r.runKey, y);
    const rows = runRows(r, y, x, untilMs);
    parts.push(rows.svg);
    y += rows.height;
  }
  // Which run took each event: a faint line from the event's mark to the start of the run's bar.
  const links = events.flatMap((ev) => {
    const ms = at(ev);
    const run = ev.runKey && ['started', 'coalesced', 'held'].includes(ev.decision) ? runs.get(ev.finalRunKey ?? ev.runKey) : undefined;
    const ry = run && runY.get(run.runKey);
    if (ms === undefined || !run || ry === undefined) return [];
    return [`<line x1="${x(ms)}" y1="${eventY.get(ev.eventKey)! + 6}" x2="${x(Date.parse(run.startedAt))}" y2="${ry - 7}" class="link"/>`];
  });
  const height = y + 10;
  const ticks = Array.from({ length: 6 }, (_, i) => lo + ((hi - lo) * i) / 5)
    .map(
      (ms) =>
        `<line x1="${x(ms)}" y1="20" x2="${x(ms)}" y2="${height - 24}" class="grid"/><text x="${x(ms)}" y="${height - 8}" class="small" text-anchor="middle">${clock(ms, hi - lo < 10_000)}</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${height + 6}" width="${W}" height="${height + 6}" role="img" aria-label="${e(`timeline of ${t.agent} / ${t.wakeKey}`)}" data-testid="timeline">
<style>text{font:12px system-ui,sans-serif;fill:#1b1b1b}.small{font-size:11px;fill:#57606a}.head{font-weight:700}.grid{stroke:#eaeef2}.link{stroke:#8c959f;stroke-dasharray:2 3}</style>
${ticks}${links.join('')}${parts.join('\n')}
</svg>`;
}
