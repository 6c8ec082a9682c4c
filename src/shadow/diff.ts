import { isDeepStrictEqual } from 'node:util';
import type { Proposal } from '../core/contracts';
import type { RunResult, TerminalReason } from '../core/run-types';
import type { ToolAnswers } from '../core/recorded-tools';

/*
 * What a shadow run changed against the run it shadows, wake by wake and in sum: pure, no Temporal.
 * Effects are compared as each run staged them (name and arguments, in order), so the original's
 * effects compare the same whether they were carried out, refused by a person or never reached.
 */

/** One argument that differs, by its JSON path (`a.b[2]`), before and after (absent: undefined). */
export interface ArgChange {
  path: string;
  before?: unknown;
  after?: unknown;
}

/** One staged effect that differs, at its step: added, removed, or the same effect with other arguments. */
export type EffectChange =
  | { step: number; effect: string; change: 'added'; args: Record<string, unknown> }
  | { step: number; effect: string; change: 'removed'; args: Record<string, unknown> }
  | { step: number; effect: string; change: 'args'; args: ArgChange[] };

interface BeforeAfter<T> {
  before: T;
  after: T;
}

/** One recorded run beside its shadow run. */
export interface RunDiff {
  runKey: string;
  wakeKey: string;
  shadowRunKey: string;
  terminalReason: BeforeAfter<TerminalReason> & { changed: boolean; note?: string };
  answer: BeforeAfter<unknown> & { changed: boolean };
  effects: EffectChange[];
  turns: BeforeAfter<number>;
  tokens: BeforeAfter<number>;
  costUsd: BeforeAfter<number>;
  /** The shadow escalated (to a person) where the recorded run did not. */
  newEscalation: boolean;
  /** `--tools recorded`: the shadow's tool calls answered from the recorded run's history, and those it made live. */
  toolCalls?: ToolAnswers;
}

/** Every wake's diff in sum: the figures a team gates on (`--fail-if`). */
export interface ShadowSummary {
  wakes: number;
  /** Wakes whose staged effects differ (added, removed, or other arguments). */
  changedEffects: number;
  /** Wakes whose terminal reason differs (not counting those a person decided in the recorded run). */
  changedReason: number;
  changedAnswer: number;
  newEscalations: number;
  tokens: BeforeAfter<number> & { delta: number };
  costUsd: BeforeAfter<number> & { delta: number };
  turns: BeforeAfter<number> & { delta: number };
  /** `--tools recorded`: tool calls answered from the recorded runs' histories, and those made live, over every wake. */
  toolCalls?: ToolAnswers;
}

const stagedOf = (r: RunResult): Proposal[] => {
  const staged = (r.output as { staged?: unknown } | undefined)?.staged;
  return Array.isArray(staged) ? (staged as Proposal[]) : [];
};
const answerOf = (r: RunResult): unknown => (r.output as { answer?: unknown } | undefined)?.answer;

/**
 * A recorded run whose end a person decided (an irreversible effect rejected, or not answered in
 * time): a shadow run waits for no one, so its terminal reason is not comparable there.
 */
function personDecided(r: RunResult): boolean {
  const out = r.output as { awaiting?: unknown; decision?: unknown } | undefined;
  return (r.terminalReason === 'blocked' && out?.decision !== undefined) || (r.terminalReason === 'escalated' && out?.awaiting !== undefined);
}

/** The leaves where two JSON values differ, by path. */
export function argChanges(before: unknown, after: unknown, path = ''): ArgChange[] {
  if (isDeepStrictEqual(before, after)) return [];
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (Array.isArray(before) && Array.isArray(after)) {
    return Array.from({ length: Math.max(before.length, after.length) }, (_, i) => argChanges(before[i], after[i], `${path}[${i}]`)).flat();
  }
  if (isObj(before) && isObj(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => argChanges(before[k], after[k], path ? `${path}.${k}` : k));
  }
  return [{ path: path || '(root)', ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) }];
}

/** Staged effects step by step: the same effect at a step compares its arguments; another effect there is one removed and one added. */
export function effectChanges(before: Proposal[], after: Proposal[]): EffectChange[] {
  const out: EffectChange[] = [];
  for (let step = 0; step < Math.max(before.length, after.length); step++) {
    const b = before[step];
    const a = after[step];
    if (b && a && b.effect === a.effect) {
      const args = argChanges(b.args, a.args);
      if (args.length) out.push({ step, effect: a.effect, change: 'args', args });
      continue;
    }
    if (b) out.push({ step, effect: b.effect, change: 'removed', args: b.args });
    if (a) out.push({ step, effect: a.effect, change: 'added', args: a.args });
  }
  return out;
}

/** The recorded run `before` beside its shadow `after`. */
export function diffRun(before: RunResult, after: RunResult, shadowRunKey: string): RunDiff {
  const decided = personDecided(before);
  const reasonDiffers = before.terminalReason !== after.terminalReason;
  const usage = (r: RunResult) => ({ turns: r.usage?.turns ?? 0, tokens: r.usage?.tokens ?? 0, costUsd: r.usage?.costUsd ?? 0 });
  const [u0, u1] = [usage(before), usage(after)];
  return {
    runKey: before.runKey,
    wakeKey: before.wakeKey,
    shadowRunKey,
    terminalReason: {
      before: before.terminalReason,
      after: after.terminalReason,
      changed: reasonDiffers && !decided,
      ...(reasonDiffers && decided ? { note: 'a person decided the recorded run here; a shadow run waits for no one' } : {}),
    },
    answer: { before: answerOf(before), after: answerOf(after), changed: !isDeepStrictEqual(answerOf(before), answerOf(after)) },
    effects: effectChanges(stagedOf(before), stagedOf(after)),
    turns: { before: u0.turns, after: u1.turns },
    tokens: { before: u0.tokens, after: u1.tokens },
    costUsd: { before: u0.costUsd, after: u1.costUsd },
    newEscalation: after.terminalReason === 'escalated' && before.terminalReason !== 'escalated',
    ...(after.shadowTools ? { toolCalls: after.shadowTools } : {}),
  };
}

const sum = (diffs: RunDiff[], of: (d: RunDiff) => BeforeAfter<number>, digits = 0) => {
  const round = (x: number) => Math.round(x * 10 ** digits) / 10 ** digits;
  const before = round(diffs.reduce((s, d) => s + of(d).before, 0));
  const after = round(diffs.reduce((s, d) => s + of(d).after, 0));
  return { before, after, delta: round(after - before) };
};

export function summarize(diffs: RunDiff[]): ShadowSummary {
  const answered = diffs.flatMap((d) => (d.toolCalls ? [d.toolCalls] : []));
  return {
    wakes: diffs.length,
    changedEffects: diffs.filter((d) => d.effects.length > 0).length,
    changedReason: diffs.filter((d) => d.terminalReason.changed).length,
    changedAnswer: diffs.filter((d) => d.answer.changed).length,
    newEscalations: diffs.filter((d) => d.newEscalation).length,
    tokens: sum(diffs, (d) => d.tokens),
    costUsd: sum(diffs, (d) => d.costUsd, 6),
    turns: sum(diffs, (d) => d.turns),
    ...(answered.length ? { toolCalls: { recorded: answered.reduce((n, t) => n + t.recorded, 0), live: answered.reduce((n, t) => n + t.live, 0) } } : {}),
  };
}

/** The figures `--fail-if` may name: counts of wakes (compared as a count, or as a share of the wakes with `%`) and deltas. */
const GATEABLE = {
  changedEffects: (s: ShadowSummary) => s.changedEffects,
  changedReason: (s: ShadowSummary) => s.changedReason,
  changedAnswer: (s: ShadowSummary) => s.changedAnswer,
  newEscalations: (s: ShadowSummary) => s.newEscalations,
  tokenDelta: (s: ShadowSummary) => s.tokens.delta,
  costDelta: (s: ShadowSummary) => s.costUsd.delta,
  turnDelta: (s: ShadowSummary) => s.turns.delta,
} as const;
const COUNTS = new Set(['changedEffects', 'changedReason', 'changedAnswer', 'newEscalations']);

/** A `--fail-if` condition, parsed: true when the summary crosses it. */
export interface FailIf {
  text: string;
  crossed(s: ShadowSummary): boolean;
}

/**
 * Parse `--fail-if` (`changedEffects>5%`, `newEscalations>0`, `costDelta>0.10`): a figure, one of
 * `>`, `>=`, `<`, `<=`, `=`, and a number; `%` makes a count a share of the wakes. Throws naming
 * what is wrong.
 */
export function parseFailIf(text: string): FailIf {
  const m = /^\s*([A-Za-z]+)\s*(>=|<=|>|<|=)\s*(-?\d+(?:\.\d+)?)\s*(%?)\s*$/.exec(text);
  if (!m) throw new Error(`--fail-if "${text}" is not <figure><op><number>[%], e.g. "changedEffects>5%"`);
  const [, figure, op, num, pct] = m as unknown as [string, string, string, string, string];
  const read = GATEABLE[figure as keyof typeof GATEABLE];
  if (!read) throw new Error(`--fail-if: unknown figure "${figure}" (one of ${Object.keys(GATEABLE).join(', ')})`);
  if (pct && !COUNTS.has(figure)) throw new Error(`--fail-if: "${figure}" is a delta; only a count of wakes takes %`);
  const bound = Number(num);
  const compare: Record<string, (x: number) => boolean> = {
    '>': (x) => x > bound,
    '>=': (x) => x >= bound,
    '<': (x) => x < bound,
    '<=': (x) => x <= bound,
    '=': (x) => x === bound,
  };
  return {
    text: text.trim(),
    crossed: (s) => {
      const value = read(s);
      return compare[op]!(pct ? (s.wakes ? (100 * value) / s.wakes : 0) : value);
    },
  };
}
