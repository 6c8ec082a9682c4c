import type { CommitInput, EffectOutcome, Proposal } from '../core/contracts';
import { runEffectKey } from '../core/effect-slots';
import type { AgentPolicy } from '../core/policy';
import { canonicalJson } from '../core/canonical-json';
import { createHash } from 'node:crypto';
import type { TrailApproval, TrailEffect } from './types';

/**
 * One event of a workflow's history as the trail reads it: plain JSON, payloads decoded only where
 * the trail needs them (src/trail/read.ts makes these from Temporal's history; unit tests write them).
 */
export type RecordedEvent =
  /** `firstRunId`: the chain's first run (`workflowInfo().firstExecutionRunId`; a reset run keeps it). */
  | { kind: 'started'; at: string; input?: unknown; firstRunId?: string }
  | { kind: 'activity'; id: string; at: string; activityType: string; input?: unknown }
  | { kind: 'activity-done'; scheduledId: string; at: string; result?: unknown }
  | { kind: 'activity-failed'; scheduledId: string; at: string; message: string; type?: string }
  | { kind: 'signal'; at: string; name: string; input?: unknown }
  | { kind: 'child'; at: string; workflowId: string }
  | { kind: 'child-done'; at: string; workflowId: string; result?: unknown }
  | { kind: 'update'; at: string; id: string; name: string; input?: unknown }
  | { kind: 'update-done'; at: string; id: string; result?: unknown }
  | { kind: 'closed'; at: string; status: string; result?: unknown };

/** Activity types and signals whose payloads the trail decodes (every other payload stays undecoded). */
export const DECODED_ACTIVITIES: ReadonlySet<string> = new Set(['prepareRun', 'commitEffect']);
export const DECODED_SIGNALS: ReadonlySet<string> = new Set(['approve', 'reject', 'skipped', 'delivery']);
export const DECODED_UPDATES: ReadonlySet<string> = new Set(['offer', 'steer']);

/** What a run's history says it did. */
export interface RunFacts {
  /** The agent's policy as the run's first step read it. */
  policy?: Pick<AgentPolicy, 'budget' | 'effects' | 'approval' | 'version'>;
  modelTurns: number;
  toolCalls: number;
  subagents: number;
  commits: CommitAttempt[];
  decisions: { approved: boolean; who: string; reason?: string; effectKey?: string; at: string }[];
}

interface CommitAttempt {
  input: CommitInput;
  outcome?: EffectOutcome;
  failed?: { message: string; type?: string };
  at?: string;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Count and collect from a run's history: model turns, tool calls, subagents, effect commits, approval signals. */
export function runFacts(events: readonly RecordedEvent[]): RunFacts {
  const scheduled = new Map<string, Extract<RecordedEvent, { kind: 'activity' }>>();
  const commits = new Map<string, CommitAttempt>();
  const facts: RunFacts = { modelTurns: 0, toolCalls: 0, subagents: 0, commits: [], decisions: [] };
  for (const e of events) {
    switch (e.kind) {
      case 'activity':
        scheduled.set(e.id, e);
        if (e.activityType === 'toolCall') facts.toolCalls += 1;
        if (e.activityType === 'commitEffect' && e.input) {
          const attempt: CommitAttempt = { input: e.input as CommitInput };
          commits.set(e.id, attempt);
          facts.commits.push(attempt);
        }
        break;
      case 'activity-done': {
        const type = scheduled.get(e.scheduledId)?.activityType;
        if (type === 'modelTurn') facts.modelTurns += 1;
        if (type === 'prepareRun') facts.policy = (e.result as { policy?: AgentPolicy } | undefined)?.policy;
        const commit = commits.get(e.scheduledId);
        if (commit) Object.assign(commit, { outcome: e.result as EffectOutcome, at: e.at });
        break;
      }
      case 'activity-failed': {
        const commit = commits.get(e.scheduledId);
        if (commit) Object.assign(commit, { failed: { message: e.message, ...(e.type ? { type: e.type } : {}) }, at: e.at });
        break;
      }
      case 'child':
        facts.subagents += 1;
        break;
      case 'child-done': {
        const spent = (e.result as { spent?: { turns?: unknown; toolCalls?: unknown } } | undefined)?.spent;
        facts.modelTurns += num(spent?.turns);
        facts.toolCalls += num(spent?.toolCalls);
        break;
      }
      case 'signal': {
        if (e.name !== 'approve' && e.name !== 'reject') break;
        const d = (e.input ?? {}) as { who?: unknown; reason?: unknown; effectKey?: unknown };
        if (typeof d.who !== 'string' || !d.who) break; // the run ignores a decision without who
        facts.decisions.push({
          approved: e.name === 'approve',
          who: d.who,
          ...(typeof d.reason === 'string' ? { reason: d.reason } : {}),
          ...(typeof d.effectKey === 'string' ? { effectKey: d.effectKey } : {}),
          at: e.at,
        });
        break;
      }
      default:
        break;
    }
  }
  return facts;
}

/** sha256 of the arguments as canonical JSON, first 16 hex digits. */
export function argsDigest(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('hex')
    .slice(0, 16);
}

/** What the run's result or live status says of its effects, beside its history. */
export interface EffectContext {
  runKey: string;
  /** The effect key of a staged effect, when it is not `runKey#effect@n<nth>` (an execution again's, whose slots carry keys). */
  keyOf?: (staged: Proposal[], step: number) => string;
  open: boolean;
  /** The staged proposals, in commit order (the result's `output.staged`), when recorded. */
  staged?: Proposal[];
  /** Committed outcomes from the result (`output.committed`). */
  committed?: EffectOutcome[];
  /** The effect an open run waits on (its status query). */
  awaiting?: { effectKey: string; effect: string; args: Record<string, unknown> };
  /** An escalated run: the effect whose approval timed out (`output.awaiting`). */
  timedOut?: string;
}

const stepOf = (key: string): number => Number(/@(\d+)$/.exec(key)?.[1] ?? Number.MAX_SAFE_INTEGER);

/**
 * Every effect of one run, in commit order: its key, class, argument digest, outcome and approval.
 * The staged list (or, where the result keeps none, the commits in history and the one waiting) names
 * the effects; history and the result say what became of each. Approvals are matched in order: a
 * decision naming an effect key goes to that effect, one naming none to the first effect still waiting for one.
 */
export function effectsOf(facts: RunFacts, ctx: EffectContext): TrailEffect[] {
  const byKey = new Map<string, { effect: string; args?: Record<string, unknown> }>();
  const keyOf = ctx.keyOf ?? ((staged: Proposal[], i: number) => runEffectKey({ runKey: ctx.runKey }, staged, i));
  const position = new Map<string, number>();
  (ctx.staged ?? []).forEach((p, i, all) => {
    const key = keyOf(all, i);
    byKey.set(key, { effect: p.effect, args: p.args });
    position.set(key, i);
  });
  for (const c of facts.commits) if (!byKey.has(c.input.effectKey)) byKey.set(c.input.effectKey, { effect: c.input.effect.name, args: c.input.args });
  for (const o of ctx.committed ?? []) if (!byKey.has(o.effectKey)) byKey.set(o.effectKey, { effect: o.name });
  if (ctx.awaiting && !byKey.has(ctx.awaiting.effectKey)) byKey.set(ctx.awaiting.effectKey, { effect: ctx.awaiting.effect, args: ctx.awaiting.args });

  const decisions = [...facts.decisions];
  // In commit order: the staged list's (a replay's keys carry the recorded run's steps), else the key's step.
  const order = (key: string) => position.get(key) ?? stepOf(key);
  const keys = [...byKey.keys()].sort((a, b) => order(a) - order(b));
  return keys.map((key) => {
    const { effect, args } = byKey.get(key)!;
    const commit = [...facts.commits].reverse().find((c) => c.input.effectKey === key);
    const done = commit?.outcome ?? ctx.committed?.find((o) => o.effectKey === key);
    const policy = commit?.input.effect ?? facts.policy?.effects.find((p) => p.name === effect);
    const required = policy ? !policy.reversible && facts.policy?.approval.irreversible !== 'auto' : false;
    const approval = approvalOf(key, required, decisions, ctx);
    const base = {
      effectKey: key,
      effect,
      ...(policy ? { class: policy.class, reversible: policy.reversible } : done ? { class: done.class } : {}),
      ...(args !== undefined ? { argsDigest: argsDigest(args) } : {}),
      approval,
    };
    if (done) return { ...base, outcome: done.outcome, ref: done.ref, attempt: done.attempt, ...(commit?.at ? { at: commit.at } : {}) };
    if (commit?.failed) {
      const ambiguous = commit.failed.type === 'EffectAmbiguous';
      return { ...base, outcome: ambiguous ? 'ambiguous' : 'failed', ...(commit.at ? { at: commit.at } : {}) };
    }
    if (commit) return { ...base, outcome: ctx.open ? 'in_flight' : 'failed' };
    if (approval.decision === 'waiting') return { ...base, outcome: 'awaiting_approval' };
    if (approval.decision === 'rejected') return { ...base, outcome: 'rejected' };
    return { ...base, outcome: 'not_started' };
  });
}

function approvalOf(key: string, required: boolean, decisions: RunFacts['decisions'], ctx: EffectContext): TrailApproval {
  if (!required) return { required: false };
  const i = decisions.findIndex((d) => d.effectKey === key || d.effectKey === undefined);
  if (i >= 0) {
    const [d] = decisions.splice(i, 1);
    return { required, decision: d!.approved ? 'approved' : 'rejected', who: d!.who, ...(d!.reason ? { reason: d!.reason } : {}), at: d!.at };
  }
  if (ctx.awaiting?.effectKey === key) return { required, decision: 'waiting' };
  if (ctx.timedOut === key) return { required, decision: 'timed_out' };
  return { required };
}
