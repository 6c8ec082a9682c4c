/**
 * `npm run soak`: a production-shaped topology on this machine under mixed load, faults injected,
 * then an accounting of every delivery from what the senders were told and what Temporal and the
 * stand-ins hold. Knobs: SOAK_S (load seconds, default 300), SOAK_RATE (deliveries/s, default 6),
 * SOAK_WORKERS (2), SOAK_FAULT_EVERY_S (30), SOAK_DRAIN_S (240), SOAK_CLI_EVERY_S (4), SOAK_OPERATOR_EVERY_S
 * (8; 0: no operator faults).
 * With TEMPORAL_ADDRESS set it uses that server (envconfig profile, TLS, API key, namespace) and
 * skips only the server restart. The last line printed is one JSON object: {"soak":{...}}.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { streamKey, deadLetterKey } from '../../src/trigger/queue/redis-streams';
import { loadApp } from '../../src/runtime/load-app';
import { syncSchedules } from '../../schedules/sync';
import { account, readRuns, type Accounting } from './accounting';
import { supervisorId } from '../../src/core/ids';
import { supervisorStatusQuery } from '../../src/core/supervisor-messages';
import { askCoalescers, busyCoalescers } from './coalescers';
import { FaultInjector, OPERATOR_FAULTS } from './faults';
import { LoadGenerator, type Delivery } from './load';
import { NOTES_SOURCE } from './notes-agent';
import { operatorFindings, operatorTools, printOperatorFindings } from './operators';
import { keyEvent } from '../../src/gate/gate';
import type { TriggerRegistry } from '../../src/gate/trigger-registry';
import { rssMb } from './procs';
import { startApprover } from './approve';
import { startTopology, type Topology } from './topology';

const num = (name: string, dflt: number) => (process.env[name] ? Number(process.env[name]) : dflt);
const SECONDS = num('SOAK_S', 300);
const RATE = num('SOAK_RATE', 6);
const WORKERS = num('SOAK_WORKERS', 2);
const FAULT_EVERY_MS = num('SOAK_FAULT_EVERY_S', 30) * 1000;
const DRAIN_MS = num('SOAK_DRAIN_S', 240) * 1000;
const CLI_EVERY_MS = num('SOAK_CLI_EVERY_S', 4) * 1000;
const OPERATOR_EVERY_MS = num('SOAK_OPERATOR_EVERY_S', 8) * 1000;
const EXTERNAL = Boolean(process.env.TEMPORAL_ADDRESS);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`soak ${new Date().toISOString().slice(11, 19)} ${msg}`);

/** Messages not acknowledged (pending or unread) in the queue streams, and those dead-lettered. */
async function queueLeft(top: Topology, sources: string[]): Promise<{ unacked: number; dead: number }> {
  let unacked = 0;
  let dead = 0;
  for (const s of sources) {
    const groups = (await top
      .redis()
      .xinfo('GROUPS', streamKey(s))
      .catch(() => [])) as unknown[][];
    for (const g of groups) {
      const field = (name: string) => Number(g[g.indexOf(name) + 1] ?? 0);
      unacked += field('pending') + field('lag');
    }
    dead += await top.redis().xlen(deadLetterKey(s));
  }
  return { unacked, dead };
}

/**
 * Queue deliveries whose message went to a dead-letter stream: each dead entry marks one delivery of
 * its event (a producer duplicate is a message of its own) as given up, with the reason. Returned: the reasons.
 */
async function markDeadLettered(top: Topology, sources: string[], deliveries: Delivery[], registry: TriggerRegistry): Promise<string[]> {
  const reasons: string[] = [];
  for (const source of sources) {
    const entries = (await top.redis().xrange(deadLetterKey(source), '-', '+')) as [string, string[]][];
    for (const [, fields] of entries) {
      const field = (name: string) => fields[fields.indexOf(name) + 1] ?? '';
      let eventKey: string;
      try {
        eventKey = keyEvent(registry, { source, ...(JSON.parse(field('event')) as object) }).input.eventKey;
      } catch {
        continue; // not one of the load's messages
      }
      const d = deliveries.find((x) => (x.kind === 'queue' || x.kind === 'queue-dup') && x.eventKey === eventKey && x.status === 202);
      if (!d) continue;
      d.status = 0;
      d.attempts.push({ t: Date.now(), ingress: 'dead-letter', status: 0, retryAfter: null, error: field('reason') });
      reasons.push(`${eventKey}: ${field('reason')}`);
    }
  }
  return reasons;
}

/** Sample every process's RSS every 5 s: name -> [offset s, MB] of its current pid. */
function sampleRss(top: Topology, t0: number, samples: Map<string, [number, number, number][]>): () => void {
  const timer = setInterval(() => {
    const live = top.procs.filter((p) => p.pid !== undefined);
    void rssMb(live.map((p) => p.pid!)).then((mb) => {
      for (const p of live) {
        const v = mb.get(p.pid!);
        if (v !== undefined) samples.set(p.name, [...(samples.get(p.name) ?? []), [(Date.now() - t0) / 1000, p.pid!, v]]);
      }
    });
  }, 5000);
  return () => clearInterval(timer);
}

/** Per process: RSS at the end of warm-up (a third in) and at the end, of the pid it ran as then; flat when it grew by under 50% or 40 MB. */
function rssReport(samples: Map<string, [number, number, number][]>, seconds: number) {
  const out: Record<string, { warm: number; end: number; max: number; flat: boolean }> = {};
  for (const [name, s] of samples) {
    const last = s.at(-1)!;
    const samePid = s.filter(([t, pid]) => pid === last[1] && t >= seconds / 3);
    const warm = samePid[0]?.[2] ?? last[2];
    out[name] = { warm, end: last[2], max: Math.max(...s.map(([, , v]) => v)), flat: last[2] - warm < Math.max(40, warm * 0.5) };
  }
  return out;
}

async function main(): Promise<void> {
  log(
    `starting: ${SECONDS} s of load at ${RATE}/s, ${WORKERS} workers, a fault every ${FAULT_EVERY_MS / 1000} s, ${EXTERNAL ? 'external Temporal' : 'own dev server'}`,
  );
  const top = await startTopology({ workers: WORKERS, external: EXTERNAL });
  // Whatever ends the soak early (an error, Ctrl-C, a test's timeout) stops what it started.
  let tornDown: Promise<void> | undefined;
  const teardown = () => (tornDown ??= top.teardown().catch((err: unknown) => log(`teardown: ${(err as Error).message}`)));
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void teardown().then(() => process.exit(130)));
  try {
    await soak(top);
  } finally {
    await teardown();
  }
  process.exit(exitCode);
}

let exitCode = 0;

async function soak(top: Topology): Promise<void> {
  log(`up: task queue ${top.taskQueue}, ingresses ${top.ingresses.join(' ')}, logs in ${top.dir}`);
  process.env.WAKEGATE_APP = top.env.WAKEGATE_APP;
  const app = loadApp(top.env.WAKEGATE_APP!);
  await app.supervisorLink(top.client(), top.taskQueue).ensure(true);
  await syncSchedules({ client: top.client(), taskQueue: top.taskQueue, definitions: app.schedules, registry: app.registry });
  const queueSources = ['campaigns', 'incidents', NOTES_SOURCE];

  const t0 = Date.now();
  const until = t0 + SECONDS * 1000;
  const rss = new Map<string, [number, number, number][]>();
  const stopRss = sampleRss(top, t0, rss);
  const approver = startApprover(top);
  const load = new LoadGenerator({
    ingresses: top.ingresses,
    redis: () => top.redis(),
    registry: app.registry,
    cliEnv: top.env,
    ratePerS: RATE,
    cliEveryMs: CLI_EVERY_MS,
  });
  const faults = new FaultInjector({
    procs: top.procs,
    everyMs: FAULT_EVERY_MS,
    stopAtMs: SECONDS * 400,
    stopForMs: 12_000,
    redisAtMs: SECONDS * 300 + 5000,
    restartRedis: () => top.restartRedis(),
    temporalAtMs: top.restartTemporal ? SECONDS * 600 + 7000 : undefined,
    restartTemporal: top.restartTemporal,
    ...(OPERATOR_EVERY_MS > 0 ? { operator: operatorTools(top, load, OPERATOR_EVERY_MS) } : {}),
  });
  faults.start(t0, until);
  await load.run(until);
  log(`load done: ${load.deliveries.length} deliveries; waiting for the faults under way`);
  await faults.settle();
  log('faults settled; draining');

  // Drain: the schedules stop, the queue empties, the debounces pass, every run ends (bounded).
  for (const s of app.schedules)
    await top
      .client()
      .schedule.getHandle(s.id)
      .pause('soak drain')
      .catch(() => undefined);
  const drainUntil = Date.now() + DRAIN_MS;
  let runs = await readRuns(top.client(), top.taskQueue);
  let quiet = 0;
  await sleep(12_000);
  while (Date.now() < drainUntil) {
    const q = await queueLeft(top, queueSources);
    runs = await readRuns(top.client(), top.taskQueue);
    const busy = await busyCoalescers(top.client(), top.taskQueue).catch(() => ['?']);
    quiet = runs.open.length === 0 && q.unacked === 0 && busy.length === 0 ? quiet + 1 : 0;
    log(`drain: ${runs.open.length} runs open, ${busy.length} coalescers with a batch or a run, ${q.unacked} queue messages unacknowledged`);
    if (quiet >= 2) break;
    await sleep(5000);
  }
  const approvals = await approver.stop();
  stopRss();
  const q = await queueLeft(top, queueSources);
  runs = await readRuns(top.client(), top.taskQueue);
  // A dead-lettered message was not accepted: it waits in its dead-letter stream, with its reason.
  const dead = await markDeadLettered(top, queueSources, load.deliveries, app.registry);
  const result = account({
    deliveries: load.deliveries,
    queueUnacked: q.unacked,
    runs,
    outside: {
      exports: top.standins.exports.jobs,
      tickets: top.tracker.tickets,
      channel: top.standins.channel.messages,
      pulls: top.standins.pulls.pulls,
    },
    faults: faults.faults,
  });
  // An event no run shows may be `stale` (answered `accepted`, decided later) or `skipped` with no live run left to record it on.
  const words = await askCoalescers(top.client(), load.deliveries, result.lost);
  const decidedStale = words.filter((w) => w.decision === 'stale').map((w) => w.eventKey);
  const skippedUnrecorded = words.filter((w) => w.decision === 'skipped').map((w) => w.eventKey);
  result.lost = result.lost.filter((k) => !decidedStale.includes(k) && !skippedUnrecorded.includes(k));
  const lostWords = words.filter((w) => w.decision !== 'stale' && w.decision !== 'skipped');
  // From Temporal's records: every coalescer's offers (its histories), and what the steer agent's models were given.
  const { stuck, unseen } = await operatorFindings(top, runs.closed, app.agents, result);
  const rssMbReport = rssReport(rss, SECONDS);
  writeFileSync(path.join(top.dir, 'deliveries.json'), JSON.stringify(load.deliveries, null, 1));
  writeFileSync(path.join(top.dir, 'runs.json'), JSON.stringify(runs, null, 1));
  const supervisor = await top
    .client()
    .workflow.getHandle(supervisorId(top.taskQueue))
    .query(supervisorStatusQuery)
    .catch(() => undefined);
  printSummary(result, faults, approvals, rssMbReport, q);
  console.error(`  supervisor: ${supervisor?.mode ?? '?'}; trips: ${JSON.stringify(supervisor?.trips.map((t) => t.reason) ?? [])}`);
  console.error(`  accepted, then decided stale by their coalescer: ${decidedStale.length}`);
  console.error(`  decided skipped by their coalescer with no live run left to record them on: ${skippedUnrecorded.length}`);
  console.error(`  dead-lettered queue messages (given up, kept with their reason): ${dead.length}${dead.length ? `: ${dead.slice(0, 10).join('; ')}` : ''}`);
  const failedRuns = runs.closed.filter((r) => r.terminalReason === 'failed');
  const firstFailed = failedRuns.slice(0, 10).map((r) => r.workflowId);
  console.error(`  failed runs: ${failedRuns.length}${failedRuns.length ? `: ${firstFailed.join('; ')}` : ''}`);
  printOperatorFindings(faults.faults, { stuck, unseen });
  for (const w of lostWords) console.error(`  lost ${w.eventKey}: its coalescer ${w.coalescerId} says ${JSON.stringify(w)}`);
  const failed =
    result.lost.length +
    result.doubleAbsorbed.length +
    result.answersNamingTwoRuns.length +
    result.duplicateEffects.length +
    result.reconcileMismatch.length +
    result.stuckRuns.length +
    result.invalidAccepted.length +
    stuck.length +
    unseen.length;
  console.log(
    JSON.stringify({
      soak: {
        seconds: SECONDS,
        deliveries: result.deliveries,
        accepted: result.accepted,
        lost: result.lost.length,
        doubleAbsorbed: result.doubleAbsorbed.length,
        duplicateEffects: result.duplicateEffects.length + result.reconcileMismatch.length,
        stuckRuns: result.stuckRuns.length,
        stuckKeys: stuck.length,
        unseenAbsorbed: unseen.length,
        invalidAccepted: result.invalidAccepted.length,
        answeredWithoutDecision: result.answeredWithoutDecision.length,
        answersNamingTwoRuns: result.answersNamingTwoRuns.length,
        gaveUp: result.gaveUp,
        deadLettered: dead.length,
        failedRuns: failedRuns.length,
        skippedUnrecorded: skippedUnrecorded.length,
        runs: result.runs,
        fiveXx: result.fiveXx,
        unexplained5xx: result.unexplained5xx.length,
        fiveXxWithoutRetryAfter: result.fiveXxWithoutRetryAfter.length,
        kills: faults.count('kill'),
        stops: faults.count('stop'),
        restarts: { redis: faults.count('redis-restart'), temporal: faults.count('temporal-restart') },
        operator: Object.fromEntries(OPERATOR_FAULTS.map((k) => [k, faults.count(k)])),
        approvals,
        supervisorTrips: supervisor?.trips.length ?? -1,
        rssMb: Object.fromEntries(Object.entries(rssMbReport).map(([k, v]) => [k, v.end])),
        rssFlat: Object.values(rssMbReport).every((v) => v.flat),
      },
    }),
  );
  exitCode = failed ? 1 : 0;
}

function printSummary(r: Accounting, faults: FaultInjector, approvals: number, rss: ReturnType<typeof rssReport>, q: { unacked: number; dead: number }): void {
  const list = (what: string, items: string[]) => items.length && console.error(`  ${what} (${items.length}): ${items.slice(0, 30).join('; ')}`);
  console.error(
    [
      '',
      `SOAK ACCOUNTING: ${r.deliveries} deliveries, ${r.accepted} accepted, ${r.refused} refused 4xx, ${r.gaveUp} given up (queue left: ${q.unacked} unacked, ${q.dead} dead)`,
      `  runs: ${r.runs} closed, ${r.stuckRuns.length} open after drain; by reason ${JSON.stringify(r.byReason)}; ${approvals} approvals given`,
      `  effects at the stand-ins: ${JSON.stringify(r.effects)}; escalated runs ${r.escalated}`,
      `  lost ${r.lost.length}, taken by two runs ${r.doubleAbsorbed.length}, duplicate effects ${r.duplicateEffects.length}, invalid accepted ${r.invalidAccepted.length}`,
      `  5xx answers: ${r.fiveXx} (${r.unexplained5xx.length} outside a restart window, ${r.fiveXxWithoutRetryAfter.length} 5xx without Retry-After)`,
      `  faults: ${faults.faults.map((f) => `${f.kind} ${f.target} ${Math.round((f.to - f.from) / 100) / 10}s`).join(', ')}`,
      `  RSS MB (warm-up -> end, max): ${Object.entries(rss)
        .map(([k, v]) => `${k} ${v.warm}->${v.end} (${v.max})${v.flat ? '' : ' GROWING'}`)
        .join(', ')}`,
    ].join('\n'),
  );
  list('LOST event keys', r.lost);
  list('taken by two runs', r.doubleAbsorbed);
  list('DUPLICATE effects', r.duplicateEffects);
  list('reconcile effects not applied once', r.reconcileMismatch);
  list('STUCK runs', r.stuckRuns);
  list('invalid input accepted', r.invalidAccepted);
  list('accepted without a decision', r.answeredWithoutDecision);
  list('deliveries of one event told of two runs', r.answersNamingTwoRuns);
  list('5xx outside a restart window', r.unexplained5xx);
  list('5xx without Retry-After', r.fiveXxWithoutRetryAfter);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
