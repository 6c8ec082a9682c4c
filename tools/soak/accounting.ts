import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { skippedSignal } from '../../src/core/messages';
import type { RunInput, RunResult } from '../../src/core/run-types';
import type { SteerAnswer } from '../../src/core/coalesce-types';
import type { CoalescerOffers, OfferSeen, RunGiven } from './temporal-records';
import { recordedHistory } from '../../src/trail/history-read';
import type { Delivery } from './load';
import type { FaultRecord } from './faults';

/** What the stand-ins hold at the end: the effects as the outside world saw them. */
export interface OutsideState {
  exports: { reference?: string; campaign: string }[];
  tickets: { reference: string }[];
  channel: { idempotencyKey?: string }[];
  pulls: { repo: string; branch: string }[];
}

/** One closed run as Temporal holds it. */
export interface RunSeen {
  workflowId: string;
  agent: string;
  status: string;
  terminalReason?: string;
  wakeKey?: string;
  absorbed: string[];
  skipped: string[];
  /** When it closed, epoch ms (Temporal's clock). */
  closeMs?: number;
}

/** The soak's findings, computed from the load generator's answers, Temporal and the stand-ins (never the system's own counters). */
export interface Accounting {
  deliveries: number;
  accepted: number;
  refused: number;
  gaveUp: number;
  invalidAccepted: string[];
  answeredWithoutDecision: string[];
  /** Events whose deliveries were told of two different runs (a replay must name the run the first delivery started or joined). */
  answersNamingTwoRuns: string[];
  lost: string[];
  doubleAbsorbed: string[];
  duplicateEffects: string[];
  /** Campaigns whose exports (reconcile, no key) do not number their successful reports: applied twice, or not at all without escalating. */
  reconcileMismatch: string[];
  stuckRuns: string[];
  runs: number;
  byReason: Record<string, number>;
  escalated: number;
  effects: { exports: number; tickets: number; channelPosts: number; pulls: number };
  fiveXx: number;
  unexplained5xx: string[];
  fiveXxWithoutRetryAfter: string[];
}

const DECIDED_ELSEWHERE = new Set(['stale']);

/** Every runWorkflow execution of the task queue: closed ones with what they absorbed, and the ids of those still open. */
export async function readRuns(client: Client, taskQueue: string): Promise<{ closed: RunSeen[]; open: string[] }> {
  const closed: RunSeen[] = [];
  const open: string[] = [];
  const infos: WorkflowExecutionInfo[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowType = "runWorkflow" AND TaskQueue = "${taskQueue}"` })) infos.push(info);
  for (const info of infos) {
    if (info.status.name === 'RUNNING') {
      open.push(info.workflowId);
      continue;
    }
    if (info.status.name === 'CONTINUED_AS_NEW') continue;
    const sa = info.typedSearchAttributes;
    const attr = (name: string) => sa.getAll().find((p) => p.key.name === name)?.value;
    const seen: RunSeen = {
      workflowId: info.workflowId,
      agent: String(attr('WakeAgent') ?? '?'),
      status: info.status.name,
      absorbed: [],
      skipped: [],
      ...(info.closeTime ? { closeMs: info.closeTime.getTime() } : {}),
    };
    try {
      const r = (await client.workflow.getHandle(info.workflowId, info.runId).result()) as RunResult;
      seen.terminalReason = r.terminalReason;
      seen.wakeKey = r.wakeKey;
      seen.absorbed = r.absorbed ? r.absorbed.map((e) => e.eventKey) : [r.eventKey];
      seen.skipped = (r.skipped ?? []).map((e) => e.eventKey);
    } catch {
      // A failed or terminated run has no result: what it took is in its input and its skip signals
      // (its search attributes index only the first 20 absorbed keys).
      seen.terminalReason = String(attr('WakeTerminalReason') ?? info.status.name.toLowerCase());
      const taken = await takenFromHistory(client, info.workflowId, info.runId).catch(() => undefined);
      if (seen.agent === '?' && taken?.agent) seen.agent = taken.agent; // terminated before it indexed itself
      const keys = attr('WakeAbsorbedEventKeys');
      seen.absorbed = taken?.absorbed ?? (Array.isArray(keys) ? keys.map(String) : [String(attr('WakeEventKey') ?? '')]);
      seen.skipped = taken?.skipped ?? [];
    }
    closed.push(seen);
  }
  return { closed, open };
}

/** What a run without a result took: the events of its input (a coalesced batch, or its one event) and those its coalescer recorded on it as skipped. */
async function takenFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ agent?: string; absorbed: string[]; skipped: string[] } | undefined> {
  const events = await recordedHistory(client, await client.workflow.getHandle(workflowId, runId).fetchHistory());
  const started = events.find((e) => e.kind === 'started');
  const input = started?.kind === 'started' ? (started.input as Partial<RunInput> | undefined) : undefined;
  if (!input?.eventKey || !input.origin) return undefined; // a schedule's fixed input: its search attributes say
  // Events steered into it while it ran (overlap `steer`): those its `steer` updates answered as taken.
  const steerUpdates = new Set(events.flatMap((e) => (e.kind === 'update' && e.name === 'steer' ? [e.id] : [])));
  const steered = events.flatMap((e) => (e.kind === 'update-done' && steerUpdates.has(e.id) ? ((e.result as SteerAnswer | undefined)?.accepted ?? []) : []));
  const absorbed = [...(input.origin.kind === 'batch' ? input.origin.absorbed.map((e) => e.eventKey) : [input.eventKey]), ...steered];
  const skipped = events.flatMap((e) =>
    e.kind === 'signal' && e.name === skippedSignal.name
      ? ((e.input as { events?: { eventKey: string }[] } | undefined)?.events ?? []).map((x) => x.eventKey)
      : [],
  );
  return { ...(input.agent ? { agent: input.agent } : {}), absorbed, skipped };
}

/** When a 5xx is expected: in a dev-server restart (and the reconnect after it) or while an ingress was down. */
function explained(t: number, faults: FaultRecord[], slackMs: number): boolean {
  return faults.some(
    (f) => (f.kind === 'temporal-restart' || (f.kind === 'kill' && f.target.startsWith('ingress'))) && t >= f.from - 1000 && t <= f.to + slackMs,
  );
}

export function account(input: {
  deliveries: Delivery[];
  queueUnacked: number;
  runs: { closed: RunSeen[]; open: string[] };
  outside: OutsideState;
  faults: FaultRecord[];
}): Accounting {
  const { deliveries, runs, outside, faults } = input;
  const ok = (d: Delivery) => d.status >= 200 && d.status < 300;
  const invalid = deliveries.filter((d) => d.kind === 'invalid');
  const valid = deliveries.filter((d) => d.kind !== 'invalid');
  const accepted = valid.filter(ok);

  // Every accepted answer carries a decision for its event (queue messages are answered by the ack alone).
  const answeredWithoutDecision = accepted
    .filter((d) => d.kind !== 'queue' && d.kind !== 'queue-dup')
    .filter((d) => !d.eventKey || !d.wakes?.length || d.wakes.some((w) => !w.decision || !w.runKey))
    .map((d) => d.id);

  // One decision per event: every delivery of it that names a run names the same one (`accepted` names
  // the coalescer, undecided yet; `skipped` the live run it was recorded on).
  const named = new Map<string, Set<string>>();
  for (const d of accepted)
    for (const w of d.wakes ?? []) {
      if (w.decision === 'accepted' || w.decision === 'skipped' || w.decision === 'stale') continue;
      const k = `${w.agent}|${d.eventKey}`;
      named.set(k, (named.get(k) ?? new Set()).add(w.runKey));
    }
  const answersNamingTwoRuns = [...named.entries()].filter(([, ids]) => ids.size > 1).map(([k, ids]) => `${k}: ${[...ids].join(', ')}`);

  // Each event taken (absorbed) by exactly one run of each agent; skipped ones recorded on a run. A run
  // that did not complete (terminated by hand, failed) counts for `lost` but not twice: its events
  // taken again by a follow-up run is the recovery, not a duplicate.
  const absorbedBy = new Map<string, string[]>();
  const completedBy = new Map<string, string[]>();
  const skippedBy = new Map<string, string[]>();
  for (const r of runs.closed) {
    for (const k of new Set(r.absorbed)) absorbedBy.set(`${r.agent}|${k}`, [...(absorbedBy.get(`${r.agent}|${k}`) ?? []), r.workflowId]);
    if (r.status === 'COMPLETED')
      for (const k of new Set(r.absorbed)) completedBy.set(`${r.agent}|${k}`, [...(completedBy.get(`${r.agent}|${k}`) ?? []), r.workflowId]);
    for (const k of new Set(r.skipped)) skippedBy.set(k, [...(skippedBy.get(k) ?? []), r.workflowId]);
  }
  const takenAnywhere = (eventKey: string) => [...absorbedBy.keys()].some((k) => k.endsWith(`|${eventKey}`)) || skippedBy.has(eventKey);
  const absorbedKeys = new Set([...absorbedBy.keys()].map((k) => k.slice(k.indexOf('|') + 1)));
  const lost = new Set<string>();
  for (const d of accepted) {
    if (!d.eventKey) continue;
    if (d.wakes?.every((w) => DECIDED_ELSEWHERE.has(w.decision))) continue;
    if (!absorbedKeys.has(d.eventKey) && !takenAnywhere(d.eventKey)) lost.add(d.eventKey);
  }
  // An event the fault injector delivered again after its coalescer closed (past its dedup horizon) is
  // a new wake by design: each such redelivery may take it into one more run.
  const redelivered = new Map<string, number>();
  for (const f of faults) if (f.kind === 'redeliver') for (const k of f.eventKeys ?? []) redelivered.set(k, (redelivered.get(k) ?? 0) + 1);
  const doubleAbsorbed = [...completedBy.entries()]
    .filter(([k, ids]) => ids.length > 1 + (redelivered.get(k.slice(k.indexOf('|') + 1)) ?? 0))
    .map(([k, ids]) => `${k} in ${ids.join(', ')}`);

  // Effects at the stand-ins: nothing with a key applied twice.
  const dupes = (keys: (string | undefined)[], what: string) => {
    const count = new Map<string, number>();
    for (const k of keys) if (k) count.set(k, (count.get(k) ?? 0) + 1);
    return [...count.entries()].filter(([, n]) => n > 1).map(([k, n]) => `${what} ${k} x${n}`);
  };
  const duplicateEffects = [
    ...dupes(
      outside.exports.map((e) => e.reference),
      'export',
    ),
    ...dupes(
      outside.tickets.map((t) => t.reference),
      'ticket',
    ),
    ...dupes(
      outside.channel.map((m) => m.idempotencyKey),
      'channel post',
    ),
    ...dupes(
      outside.pulls.map((p) => `${p.repo}#${p.branch}`),
      'pull request',
    ),
  ];

  // Each successful campaign report started its export exactly once (a failed find-or-apply escalates instead).
  const reports = new Map<string, number>();
  for (const r of runs.closed)
    if (r.agent === 'campaign-reporter' && r.terminalReason === 'success') reports.set(r.wakeKey!, (reports.get(r.wakeKey!) ?? 0) + 1);
  const exportsOf = new Map<string, number>();
  for (const e of outside.exports) exportsOf.set(e.campaign, (exportsOf.get(e.campaign) ?? 0) + 1);
  // A run stopped by a person (terminated, killed) may have exported before it stopped: one export
  // more each, at most, and never a successful report without its export.
  const stopped = new Map<string, number>();
  for (const r of runs.closed)
    if (r.agent === 'campaign-reporter' && (r.status === 'TERMINATED' || r.terminalReason === 'cancelled'))
      stopped.set(r.wakeKey!, (stopped.get(r.wakeKey!) ?? 0) + 1);
  const reconcileMismatch = [...new Set([...reports.keys(), ...exportsOf.keys()])]
    .filter((c) => {
      const [made, exported] = [reports.get(c) ?? 0, exportsOf.get(c) ?? 0];
      return exported < made || exported > made + (stopped.get(c) ?? 0);
    })
    .map((c) => `${c}: ${reports.get(c) ?? 0} successful reports, ${exportsOf.get(c) ?? 0} exports`);

  const byReason: Record<string, number> = {};
  for (const r of runs.closed) byReason[r.terminalReason ?? '?'] = (byReason[r.terminalReason ?? '?'] ?? 0) + 1;

  const fiveXx = valid.concat(invalid).flatMap((d) => d.attempts.filter((a) => a.status >= 500).map((a) => ({ d, a })));
  return {
    deliveries: deliveries.length,
    accepted: accepted.length,
    refused: valid.filter((d) => d.status >= 400 && d.status < 500).length,
    gaveUp: valid.filter((d) => !ok(d) && !(d.status >= 400 && d.status < 500)).length + input.queueUnacked,
    invalidAccepted: invalid.filter((d) => !(d.status >= 400 && d.status < 500)).map((d) => `${d.id} (${d.what}): ${d.status || 'no answer'}`),
    answeredWithoutDecision,
    answersNamingTwoRuns,
    lost: [...lost],
    doubleAbsorbed,
    duplicateEffects,
    reconcileMismatch,
    stuckRuns: runs.open,
    runs: runs.closed.length,
    byReason,
    escalated: Object.entries(byReason)
      .filter(([k]) => k.includes('escalat'))
      .reduce((n, [, v]) => n + v, 0),
    effects: { exports: outside.exports.length, tickets: outside.tickets.length, channelPosts: outside.channel.length, pulls: outside.pulls.length },
    fiveXx: fiveXx.length,
    unexplained5xx: fiveXx
      .filter(({ a }) => !explained(a.t, faults, 20_000))
      .map(({ d, a }) => `${d.id} ${a.status} at ${new Date(a.t).toISOString()} via ${a.ingress}`),
    fiveXxWithoutRetryAfter: fiveXx.filter(({ a }) => !a.retryAfter).map(({ d, a }) => `${d.id} ${a.status}`),
  };
}

/**
 * Wake keys whose last accepted event no closed run took (after the drain): the newest event each
 * coalescer was offered, by its histories, must be absorbed by a closed run, or skipped for a run
 * still open at the decision (a skip is answered once its record reached the run, which may still
 * close before listing it); a skip for a run already closed is a key stuck behind a dead run. `stale` and `mismatch` answers are passed over, and so
 * is an unanswered offer by signal older (by version) than one before it from its source.
 */
export function stuckKeys(coalescers: readonly CoalescerOffers[], closed: readonly RunSeen[]): string[] {
  const taken = new Set<string>();
  for (const r of closed) for (const k of [...r.absorbed, ...r.skipped]) taken.add(`${r.agent}|${k}`);
  const closeOf = new Map(closed.map((r) => [r.workflowId, r.closeMs]));
  const skippedForOpenRun = (o: OfferSeen) => o.decision === 'skipped' && o.runKey !== undefined && (closeOf.get(o.runKey) ?? -Infinity) >= o.atMs;
  const stuck: string[] = [];
  for (const c of coalescers) {
    // An offer by signal (the gate's fallback) is answered by nothing: when its update (same offer id)
    // was answered, that answer is the offer's decision, where it was taken.
    const answered = new Set(c.offers.flatMap((o) => (o.decision !== undefined && o.offerId ? [o.offerId] : [])));
    const offers = c.offers.filter((o) => o.decision !== undefined || !o.offerId || !answered.has(o.offerId));
    const newest = new Map<string, number>();
    const candidates = offers.filter((o) => {
      const before = newest.get(o.source);
      if (o.version !== undefined) newest.set(o.source, Math.max(before ?? o.version, o.version));
      if (o.decision === 'stale' || o.decision === 'mismatch') return false;
      return !(o.decision === undefined && o.version !== undefined && before !== undefined && o.version < before);
    });
    const last = candidates.at(-1);
    if (last && !taken.has(`${c.agent}|${last.eventKey}`) && !skippedForOpenRun(last))
      stuck.push(`${c.coalescerId}: ${last.eventKey} (${last.decision ?? 'by signal'} at ${new Date(last.atMs).toISOString()})`);
  }
  return stuck;
}

/**
 * Events a closed run lists as absorbed (its result) that its model was never given: none of its
 * model turns' inputs (Temporal's record of what the model was sent) holds the event's key. Only for
 * agents whose prompts carry each event's key (the soak's steer agent: tools/soak/notes-agent.ts); runs
 * with no result (terminated, failed) list nothing and are not judged. Nor is a run that ended
 * `cancelled` (killed by a person, stopped by a halt, superseded): a kill is a person's decision
 * about the events the run held, a redelivery of one is answered from that run's result
 * (docs/ARCHITECTURE.md), and the steered events its model had not seen left its list for the
 * follow-up run like any run's.
 */
export function unseenAbsorbed(runs: readonly RunGiven[]): string[] {
  const unseen: string[] = [];
  for (const r of runs)
    for (const k of r.terminalReason === 'cancelled' ? [] : (r.absorbed ?? []))
      if (!r.given.includes(JSON.stringify(k))) unseen.push(`${r.workflowId}: ${k} (${r.terminalReason ?? r.status}, ${r.modelTurns} model turns)`);
  return unseen;
}

/**
 * How many wakes each event (`agent|eventKey`) legitimately made: its first decision, and each later
 * one its coalescers made afresh (not a redelivery's answer) at least the agent's dedup horizon after
 * the one before: past the horizon a delivery is a new wake by rule (docs/ARCHITECTURE.md) and may
 * be taken by one more run. A fresh decision within the horizon (a dedup that failed) counts for
 * nothing. From the coalescers' histories.
 */
export function wakesByRule(coalescers: readonly CoalescerOffers[], horizonMs: (agent: string) => number): Map<string, number> {
  const times = new Map<string, number[]>();
  for (const c of coalescers)
    for (const o of c.offers) {
      if (o.duplicate || (o.decision !== 'started' && o.decision !== 'coalesced' && o.decision !== 'steered')) continue;
      const k = `${c.agent}|${o.eventKey}`;
      times.set(k, [...(times.get(k) ?? []), o.atMs]);
    }
  const wakes = new Map<string, number>();
  for (const [k, at] of times) {
    const horizon = horizonMs(k.slice(0, k.indexOf('|')));
    const sorted = [...at].sort((x, y) => x - y);
    let n = 1;
    let last = sorted[0]!;
    for (const at of sorted.slice(1)) {
      if (at - last < horizon) continue;
      n += 1;
      last = at;
    }
    wakes.set(k, n);
  }
  return wakes;
}

/** `doubleAbsorbed` (`agent|eventKey in run, run, ...`) less the events taken by no more runs than the wakes they made by rule. */
export function beyondWakesByRule(doubleAbsorbed: readonly string[], wakes: ReadonlyMap<string, number>): string[] {
  return doubleAbsorbed.filter((line) => {
    const [k, ids] = line.split(' in ') as [string, string];
    return ids.split(', ').length > (wakes.get(k) ?? 1);
  });
}
