import { deliveriesText } from '../core/delivery-ids';
import { budgetUsed } from '../trail/format';
import type { TrailEffect, TrailRun, WakeTrail } from '../trail/types';

/** Columns padded to their widest cell; the last column is left as it is. */
export function table(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map(
    (r) =>
      indent +
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
  );
}

/** `2026-12-02T14:05:01.123Z` → `2026-12-02 14:05:01`. */
const clock = (iso: string | null | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '-');

/** Control characters (an event key or delivery id comes from outside) are shown as `?`, never sent to the terminal. */
const safe = (s: string): string => [...s].map((c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? '?' : c)).join('');

function effectRow(f: TrailEffect): string[] {
  const a = f.approval;
  const approval = !a.required ? '' : a.decision ? `${a.decision}${a.who ? ` by ${a.who}` : ''}${a.at ? ` at ${clock(a.at)}` : ''}` : 'approval required';
  return [f.effect, f.class ?? '?', f.outcome, f.ref ? `ref ${f.ref}` : '', f.argsDigest ? `args ${f.argsDigest}` : '', approval, f.effectKey].map(safe);
}

function runLines(r: TrailRun): string[] {
  const budget = budgetUsed(r);
  const end = r.status === 'PENDING' ? `pending, starts by ${clock(r.closedAt)}` : `${r.status.toLowerCase()} ${r.terminalReason ?? r.phase ?? ''}`.trim();
  const lines = [
    `  ${safe(r.runKey)}`,
    `    ${clock(r.startedAt)} → ${clock(r.closedAt)}  ${end}${r.summary ? `: ${safe(r.summary)}` : ''}`,
    ...(r.version ? [`    version ${safe(r.version)}`] : []),
    `    took ${r.absorbed.length + (r.absorbedOverflow ?? 0)} event(s)${r.steered?.length ? ` (${r.steered.length} steered in while live)` : ''}, skipped ${r.skipped.length}; model turns ${r.modelTurns}, tool calls ${r.toolCalls}, subagents ${r.subagents}`,
    ...(budget ? [`    budget used: ${budget}`] : []),
  ];
  if (r.held)
    lines.push(
      `    held (${r.held.hold}) at ${clock(r.held.heldAt)}: ${safe(r.held.reason)}${r.held.releasedBy ? `; released by ${safe(r.held.releasedBy.who)}` : ''}`,
    );
  if (r.killedBy) lines.push(`    killed by ${safe(r.killedBy.who)}: ${safe(r.killedBy.reason)}`);
  if (r.replay) lines.push(`    a replay (epoch ${safe(r.replay.epoch)}) of ${safe(r.replay.of)}`);
  if (r.supersededBy) lines.push(`    cancelled for a restart: ${safe(r.supersededBy)} took its events`);
  if (r.takenBy) lines.push(`    the window had already run as ${safe(r.takenBy)}`);
  if (r.effects.length) lines.push('    effects:', ...table(r.effects.map(effectRow), '      '));
  return lines;
}

/** The trail as a short timeline for a person at a terminal: events, runs with their effects, what is not recorded, where it looked. */
export function trailTable(t: WakeTrail): string {
  const lines = [`${safe(t.agent)} · ${safe(t.wakeKey)} · ${t.path} · ${clock(t.window.since)} → ${clock(t.window.until)}`, ''];
  if (!t.found) lines.push('Nothing is recorded about this wake key in the window.', '');
  if (t.events.length) {
    lines.push(`EVENTS ${t.events.length}${t.eventsNotListed ? ` (and ${t.eventsNotListed} not listed)` : ''}`);
    const rows = [['arrived', 'occurred', 'source', 'type', 'version', 'deliveries', 'decision', 'why']];
    for (const e of t.events) {
      const deliveries = e.deliveryIds.length || e.deliveryCount ? deliveriesText(e, ',', 3) : '-';
      rows.push([clock(e.arrivedAt), clock(e.occurredAt), e.source, e.type, String(e.version ?? '-'), deliveries, e.decision, e.reason].map(safe));
    }
    lines.push(...table(rows), '');
  }
  if (t.runs.length) {
    lines.push(`RUNS ${t.runs.length}${t.runsNotListed ? ` (and ${t.runsNotListed} not listed)` : ''}`);
    for (const r of t.runs) lines.push(...runLines(r));
    lines.push('');
  }
  if (t.coalescer?.counts) {
    const c = t.coalescer.counts;
    lines.push(
      `COALESCER ${safe(t.coalescer.coalescerId)} (${t.coalescer.status.toLowerCase()}): offered ${c.offered}, started ${c.started}, coalesced ${c.coalesced}, skipped ${c.skipped}${c.steered ? `, steered ${c.steered} (refused ${c.steerRefused ?? 0})` : ''}, stale ${c.stale}, runs ${c.runs}`,
      '',
    );
  }
  lines.push('NOT RECORDED (no trail can show these)', ...t.notRecorded.map((n) => `  - ${n}`), '', 'LOOKED AT', ...t.looked.map((l) => `  - ${safe(l)}`));
  return `${lines.join('\n')}\n`;
}
