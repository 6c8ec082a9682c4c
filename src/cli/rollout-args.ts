import { z } from 'zod';
import type { CheckMetric, EvidenceCheck } from '../core/rollout';
import type { StartRequest } from '../core/rollout-messages';
import { UsageError } from './output';

/*
 * `wakegate rollout` arguments, validated here (the edge) so the rollout workflow is sent only
 * well-formed requests; what the rules then refuse (a promote on too few runs) is the workflow's word.
 */

const METRICS = ['non_success', 'failures', 'tokens_per_run', 'usd_per_run', 'effects_per_run', 'shadow_diff'] as const satisfies readonly CheckMetric[];

const Figure = (what: string) => z.coerce.number({ error: `${what} is a number` }).min(0, `${what} is 0 or more`);
const Count = (what: string) =>
  z.coerce
    .number({ error: `${what} is a whole number` })
    .int(`${what} is a whole number`)
    .min(1, `${what} is at least 1`);

/** `--share`: a fraction of wake keys, 0 to 1 (not a percentage). */
export const Share = z.coerce
  .number({ error: '--share is a fraction of wake keys from 0 to 1 (0.2 for 20%)' })
  .min(0, '--share is a fraction of wake keys from 0 to 1 (0.2 for 20%)')
  .max(1, '--share is a fraction of wake keys from 0 to 1 (0.2 for 20%)');

const CheckFields = z
  .object({
    metric: z.enum(METRICS, { error: `the metric is one of ${METRICS.join(', ')}` }),
    name: z.string().min(1).optional(),
    margin: Figure('margin').optional(),
    factor: Figure('factor').optional(),
    bound: Figure('bound').optional(),
    min: Count('min').optional(),
    onFail: z.enum(['finish', 'stop'], { error: 'onFail is finish or stop' }).default('finish'),
  })
  .strict();

/**
 * One `--check`: `<metric>[:name=N][:margin=X][:factor=X][:bound=X][:min=N][:onFail=finish|stop]`,
 * e.g. `non_success:margin=0.2:min=5:onFail=stop`. The name defaults to the metric, `min` (the
 * candidate runs before the check can fail) to the rollout's `--min-runs`, onFail to `finish`.
 */
export function parseCheck(text: string, minRuns: number): EvidenceCheck {
  const [metric, ...parts] = text.split(':');
  const fields: Record<string, string> = { metric: metric ?? '' };
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new UsageError(`--check "${text}": "${part}" is not key=value (e.g. non_success:margin=0.2:min=5:onFail=finish)`);
    const key = part.slice(0, eq);
    if (key in fields) throw new UsageError(`--check "${text}": ${key} is given twice`);
    fields[key] = part.slice(eq + 1);
  }
  const parsed = CheckFields.safeParse(fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.code === 'unrecognized_keys' ? `unknown key ${issue.keys.join(', ')} (name, margin, factor, bound, min, onFail)` : issue.message;
    throw new UsageError(`--check "${text}": ${field}`);
  }
  const c = parsed.data;
  return {
    name: c.name ?? c.metric,
    metric: c.metric,
    ...(c.margin !== undefined ? { margin: c.margin } : {}),
    ...(c.factor !== undefined ? { factor: c.factor } : {}),
    ...(c.bound !== undefined ? { bound: c.bound } : {}),
    minRuns: c.min ?? minRuns,
    onFail: c.onFail,
  };
}

/** A person acting: a name and a reason, both required. */
export function personOf(opts: { who?: string; reason?: string }): { who: string; reason: string } {
  if (!opts.who?.trim()) throw new UsageError('--who must name the person acting');
  if (!opts.reason?.trim()) throw new UsageError('--reason must say why');
  return { who: opts.who.trim(), reason: opts.reason.trim() };
}

export interface StartOptions {
  candidate?: string;
  share?: string;
  minRuns?: string;
  check?: string[];
  who?: string;
  reason?: string;
}

/** `rollout <agent> start`'s flags as the rollout's start request. The rules of checks (a margin only for shares...) are the workflow's. */
export function parseStart(opts: StartOptions): StartRequest {
  const p = personOf(opts);
  if (!opts.candidate?.trim()) throw new UsageError('--candidate must name the version to roll out');
  const share = Share.safeParse(opts.share);
  if (!share.success || shareIsZero(share.data)) throw new UsageError('--share is a fraction of wake keys over 0, at most 1 (0.2 for 20%)');
  const minRuns = Count('--min-runs').safeParse(opts.minRuns ?? '1');
  if (!minRuns.success) throw new UsageError(`--min-runs: ${minRuns.error.issues[0]!.message}`);
  if (!opts.check?.length) throw new UsageError('--check: a rollout needs at least one evidence check, e.g. --check non_success:margin=0.2:min=5');
  const checks = opts.check.map((c) => parseCheck(c, minRuns.data));
  return { candidate: opts.candidate.trim(), share: share.data, minRuns: minRuns.data, checks, ...p };
}

const shareIsZero = (share: number) => Math.round(share * 10_000) === 0;

/** `rollout <agent> step --share`. */
export function parseStep(opts: { share?: string; who?: string; reason?: string }): { share: number; who: string; reason: string } {
  const p = personOf(opts);
  const share = Share.safeParse(opts.share);
  if (!share.success) throw new UsageError(share.error.issues[0]!.message);
  return { share: share.data, ...p };
}
