import type { CheckVerdict, RolloutStats, RolloutStatus } from '../core/rollout';

/*
 * A rollout's figures as people read them: the two versions side by side over the latest evidence's
 * window, and each check's verdict. Pure: the CLI prints it as JSON, the operator page as a table.
 */

/** One figure of both versions. */
export interface FigureRow {
  label: string;
  current: string;
  candidate: string;
}

/** The two versions' figures side by side, with the window they cover and each check's verdict. */
export interface SideBySide {
  current: string;
  candidate?: string;
  /** The evidence's window (ISO) and when it was taken; absent before any evidence. */
  since?: string;
  at?: string;
  /** Taken while the fleet was held: kept, not acted on. */
  held?: boolean;
  rows: FigureRow[];
  checks: CheckVerdict[];
}

const share = (n: number, of: number) => (of ? `${Math.round((n / of) * 1000) / 10}% (${n} of ${of})` : '–');
const figure = (n: number, runs: number, digits = 2) => (runs ? `${Math.round(n * 10 ** digits) / 10 ** digits}` : '–');

function rowsOf(c: RolloutStats, k: RolloutStats): FigureRow[] {
  const rows: FigureRow[] = [
    { label: 'runs closed', current: `${c.runs}`, candidate: `${k.runs}` },
    { label: 'non-success', current: share(c.nonSuccess, c.runs), candidate: share(k.nonSuccess, k.runs) },
    { label: 'failed', current: share(c.failures, c.runs), candidate: share(k.failures, k.runs) },
    { label: 'tokens per run', current: figure(c.tokensPerRun, c.runs, 0), candidate: figure(k.tokensPerRun, k.runs, 0) },
    { label: 'USD per run', current: figure(c.usdPerRun, c.runs, 4), candidate: figure(k.usdPerRun, k.runs, 4) },
    { label: 'effects per run', current: figure(c.effectsPerRun, c.runs), candidate: figure(k.effectsPerRun, k.runs) },
  ];
  if (c.shadowDiff !== undefined || k.shadowDiff !== undefined) {
    const pct = (d?: number) => (d === undefined ? '–' : `${Math.round(d * 1000) / 10}%`);
    rows.push({ label: 'shadow diff', current: pct(c.shadowDiff), candidate: pct(k.shadowDiff) });
  }
  return rows;
}

/** The rollout's latest evidence as two columns, current and candidate, and its checks' verdicts. */
export function sideBySide(status: RolloutStatus): SideBySide {
  const { state, checks } = status;
  const e = state.evidence;
  const base = { current: state.current, ...(state.candidate !== undefined ? { candidate: state.candidate } : {}), checks };
  if (!e) return { ...base, rows: [] };
  return {
    ...base,
    since: new Date(e.sinceMs).toISOString(),
    at: new Date(e.atMs).toISOString(),
    ...(e.held ? { held: true } : {}),
    rows: rowsOf(e.current, e.candidate),
  };
}
