import { log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { CoalescerState, CoalescerStatus, Offer, RunEnded } from '../../src/core/coalesce-types';
import type { RunResult } from '../../src/core/run-types';
import { adoptSignal, coalescerQuery, deliverySignal, runEndedSignal } from '../../src/core/messages';
import { offerBySignal, signalCoalescer } from '../../src/coalescer/coalescer-start';
import { ranItsEvents, whole } from '../../src/core/coalesce-batch';
import { hash64 } from '../../src/core/hash';
import { historyOf, startedIn, untakenOf, type Left } from './recover-history';

type OfferedEvent = Offer['event'];
type Live = NonNullable<CoalescerState['running']>;

export { startedIn, untakenFrom, type Left } from './recover-history';

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** Terminated coalescers looked at in one round, at most (a mass termination is taken over several). */
const PER_ROUND = 200;
/** A terminated coalescer whose state could not be read yet (its replay failed or timed out) is tried again in later rounds, this many times. */
const TRIES = 30;
/** Those to try again, by run ID, in this worker process. */
const retryLater = new Map<string, { info: WorkflowExecutionInfo; tries: number }>();
/**
 * Visibility is eventually consistent: a coalescer closed just before a round's end may be listed
 * only after it (seconds under load, longer on Elasticsearch). Each round looks this far behind its
 * window too, and passes over those this process recovered already. A recovery made twice (a second
 * worker process, a restart) changes nothing: its offers keep their ids and are answered as
 * themselves, its tables merge, a second end of one run is ignored.
 */
const LOOK_BEHIND_MS = 120_000;
/** Terminated coalescers this process recovered, by run ID, with when: forgotten after twice the look-behind. */
const recovered = new Map<string, number>();

/**
 * A coalescer terminated by hand (as from the Web UI), or closed any way but its own (cancelled,
 * failed, timed out), loses what it held in memory: the pending batch
 * (events answered `started` or `coalesced` whose run had not started; also a batch it had decided
 * to start in the task the termination cut off) and the steered events owed to its live run. Temporal still answers a query on the terminated execution (a worker replays its
 * history up to the termination), so its last state can be read: its pending events are offered
 * again to the coalescer's ID by signal-with-start (a new chain if none runs), each under an offer id
 * of its own, and run there, after its dedup table (adopted by the new chain before its own, so a
 * redelivery of an event it had run is answered as a redelivery). What the new chain decided before
 * the recovery stays decided: a redelivery in that window (a round, 5 s) runs again, at least once. Called by the supervisor's round over closed runs
 * (activities/supervisor/supervise.ts), for the coalescers that closed terminated within that round.
 * Returns how many events were offered again.
 */
export async function recoverTerminatedCoalescers(client: Client, taskQueue: string, fromMs: number, toMs: number): Promise<number> {
  const query = closedCoalescersQuery(taskQueue, fromMs, toMs);
  for (const [runId, atMs] of recovered) if (atMs < toMs - 2 * LOOK_BEHIND_MS) recovered.delete(runId);
  const found: WorkflowExecutionInfo[] = [];
  for await (const info of client.workflow.list({ query, pageSize: PER_ROUND })) {
    if (recovered.has(info.runId) || retryLater.has(info.runId)) continue;
    found.push(info);
    if (found.length >= PER_ROUND) break;
  }
  for (const [runId, again] of retryLater) if (!found.some((f) => f.runId === runId)) found.push(again.info);
  let offered = 0;
  for (const info of found) {
    const n = await recoverOne(client, taskQueue, info);
    if (n !== undefined) {
      retryLater.delete(info.runId);
      recovered.set(info.runId, toMs);
      offered += n;
      continue;
    }
    const tries = (retryLater.get(info.runId)?.tries ?? 0) + 1;
    if (tries < TRIES) retryLater.set(info.runId, { info, tries });
    else {
      retryLater.delete(info.runId);
      recovered.set(info.runId, toMs);
      log.error('coalescer recovery: gave up reading a terminated coalescer', { coalescerId: info.workflowId, runId: info.runId, tries });
    }
  }
  return offered;
}

/**
 * What a terminated coalescer leaves to be decided again, in the order it took them, as offers: the
 * events of a live run that never started (`phantom`), the skips whose record that run had not taken
 * (the answer still waited, so nobody was told; adopted as `skipped`, a later offer would be answered
 * from a row nothing confirms, and the event lost if that run had closed), and the pending batch. An
 * open skip keeps its own offer's id, so the gate's resend of that offer is answered as itself, not as
 * a redelivery; the others are offered under {@link recoveredOfferId}. `ran`: the runs closed before
 * the recovery whose ends say they ran their events (their restart events are not offered again).
 */
export function toOfferAgain(status: Pick<CoalescerStatus, 'state' | 'openSkips'>, phantom: boolean, runId: string, ran: readonly string[] = []): Offer[] {
  const { pending, running } = status.state;
  const recovered = (event: OfferedEvent): Offer => ({ event, offerId: recoveredOfferId(runId, event.eventKey) });
  // A pending batch that restarts the live run (overlap `cancel`), or holds that run's restart events
  // offered again to this chain: those events are offered as its restart, so the next chain does not
  // answer them as the run's, which is cancelling itself (workflows/coalescer/machine.ts `restartHeld`).
  // A foreign run's restart events too (they wait for its end the same way).
  const restartOf = (e: OfferedEvent): string | undefined =>
    running && !phantom && (pending?.supersedes === running.runKey || running.restartKeys?.includes(e.eventKey))
      ? running.runKey
      : status.state.foreign?.find((f) => f.restartKeys?.includes(e.eventKey))?.runKey;
  const restarts = (e: OfferedEvent): Offer => {
    const of = restartOf(e);
    return of ? { ...recovered(e), restarts: of } : recovered(e);
  };
  // A phantom's events and the pending batch's were answered as runs to come (`started`, `coalesced`,
  // `steered`): offered as accepted, never skipped. An open skip's answer still waited: decided afresh.
  const accepted = (o: Offer): Offer => ({ ...o, accepted: true });
  // A run in `ran` closed before the recovery and its end says it ran its events (src/core/coalesce-batch.ts
  // `ranItsEvents`): those the restart batch took from it are done, as the chain's own `runEnded` and
  // `restartDone` would have left them out of it (machine.ts, by-hand.ts). Offered as its restart, they
  // would find no run of it held by the next chain (closed, it is not adopted) and run a second time.
  const done = (e: OfferedEvent): boolean => {
    const of = restartOf(e);
    if (!of || !ran.includes(of)) return false;
    const run = [running, ...(status.state.foreign ?? [])].find((r) => r?.runKey === of);
    return run?.restartKeys?.includes(e.eventKey) === true || (pending?.supersedes === of && run?.events.some((x) => x.eventKey === e.eventKey) === true);
  };
  const all: Offer[] = [
    // A live run that crossed a continue-as-new had started (the execution before waited for its start): its events kept by key alone are not a phantom's.
    ...(phantom && running ? running.events.filter(whole).map(recovered).map(accepted) : []),
    ...(status.openSkips ?? []).map((k) => (k.offerId ? { event: k.event, offerId: k.offerId } : recovered(k.event))),
    ...(pending?.events ?? [])
      .filter((e) => !done(e))
      .map(restarts)
      .map(accepted),
  ];
  const keys = new Set<string>();
  return all.filter((o) => !keys.has(o.event.eventKey) && keys.add(o.event.eventKey));
}

/**
 * The id an event offered again by a recovery gets when it has none of its own:
 * `<8 hex>:recovered:<runId>:<eventKey>`, the hex a hash of the rest. A dedup entry keeps only an
 * offer id's first 8 characters (seen-codec.ts OFFER_ID_CHARS) to tell one event's offers apart:
 * led by `recovered:` alone, the offers of one key by two recoveries (two chains terminated in turn,
 * each holding it) were taken for one offer retried, and the second was answered as the first
 * without its delivery ids joining the held event. The same recovery made twice still offers each
 * event under the same id, answered as itself.
 */
export function recoveredOfferId(runId: string, eventKey: string): string {
  const rest = `recovered:${runId}:${eventKey}`;
  return `${hash64(rest)[1].toString(16).padStart(8, '0')}:${rest}`;
}

/** The coalescers of a task queue that closed any way but their own in a round's window, and in the look-behind before it. */
export function closedCoalescersQuery(taskQueue: string, fromMs: number, toMs: number): string {
  return (
    `WorkflowType = 'coalescerWorkflow' AND TaskQueue = ${quote(taskQueue)} AND ExecutionStatus IN ('Terminated', 'Canceled', 'Failed', 'TimedOut')` +
    ` AND CloseTime > ${quote(new Date(fromMs - LOOK_BEHIND_MS).toISOString())} AND CloseTime <= ${quote(new Date(toMs).toISOString())}`
  );
}

/** The events offered again, or undefined when its state could not be read (to try again later). */
async function recoverOne(client: Client, taskQueue: string, info: WorkflowExecutionInfo): Promise<number | undefined> {
  let left: Left;
  try {
    const status = await client.workflow.getHandle(info.workflowId, info.runId).query(coalescerQuery, { seenLast: Number.MAX_SAFE_INTEGER });
    left = { to: { agent: status.agent, wakeKey: status.wakeKey, coalescerId: status.coalescerId, policy: status.policy }, status, untaken: NOTHING };
  } catch (err) {
    const untaken = await untakenOf(client, info).catch(() => undefined);
    if (!untaken) {
      log.warn('coalescer recovery: could not read a terminated coalescer; trying again next round', {
        coalescerId: info.workflowId,
        runId: info.runId,
        err: String(err),
      });
      return undefined;
    }
    left = untaken;
  }
  const { to, status, untaken } = left;
  const running = status?.state.running;
  // Its live run as its state has it may never have started: the start is decided in the workflow
  // task that a termination can cut off before its command reaches the server. Then its events wait too.
  // Not found, it may also have started and been deleted since (re-armed by a person through the chain
  // now running: that chain forgets its events): only the terminated execution's history tells.
  const before = running ? await describeRun(client, running.runKey) : undefined;
  const phantom = running !== undefined && before === undefined && !startedIn(await historyOf(client, info), running.runKey);
  // The foreign runs it held (live runs of chains terminated before it) go the same way: held by the
  // new chain while open, their ends told again once closed.
  const foreignRuns = status?.state.foreign ?? [];
  const foreignOpen: Live[] = [];
  const foreignEnded: RunEnded[] = [];
  for (const f of foreignRuns) {
    const d = await describeRun(client, f.runKey);
    if (d?.status.name === 'RUNNING') foreignOpen.push(f);
    else if (d) foreignEnded.push((await endOf(client, f, d))!);
  }
  // A run closed already whose end says it ran its events: its restart events are not offered again.
  const liveEnded = running && before && before.status.name !== 'RUNNING' ? await endOf(client, running, before) : undefined;
  const ran = [liveEnded, ...foreignEnded].filter((e): e is RunEnded => e !== undefined && ranItsEvents(e)).map((e) => e.runKey);
  const offers = withOwnIds([...(status ? toOfferAgain(status, phantom, info.runId, ran) : []), ...untaken.offers], info.runId);
  const except = offers.map((o) => o.event.eventKey);
  // Its dedup table first (signals are taken in order), then the tables sent to it that it never
  // took (an earlier recovery's), then its pending events, then the delivery ids recorded to it.
  // Its live run, still open, goes with its table: the new chain holds it as live, so the batch
  // offered again starts after it ends, one run of the key at a time.
  const { seen, seenOpeners, chain, newestVersion } = status?.state ?? { seen: [] };
  const live = running && before?.status.name === 'RUNNING' ? { live: running } : {};
  const foreign = foreignOpen.length ? { foreign: foreignOpen } : {};
  if (seen.length || 'live' in live || 'foreign' in foreign)
    await signalCoalescer(client, taskQueue, to, adoptSignal, {
      seen,
      ...(seenOpeners ? { seenOpeners } : {}),
      ...(chain ? { chain } : {}),
      newestVersion,
      except,
      ...live,
      ...foreign,
    });
  for (const a of untaken.adopts) await signalCoalescer(client, taskQueue, to, adoptSignal, { ...a, except: [...(a.except ?? []), ...except] });
  if (offers.length) await offerBySignal(client, taskQueue, to, offers);
  for (const d of untaken.deliveries) await signalCoalescer(client, taskQueue, to, deliverySignal, d);
  // Its live run closed, before or during the recovery: its end went to the terminated chain, or to no
  // chain at all. Told again here, so the steered events its model never saw are run by the new chain
  // (a second end of one run changes nothing: machine.ts `orphaned`).
  if (running && !phantom) {
    const ended = await endOf(client, running);
    if (ended) await signalCoalescer(client, taskQueue, to, runEndedSignal, ended);
  }
  for (const ended of foreignEnded) await signalCoalescer(client, taskQueue, to, runEndedSignal, ended);
  if (offers.length)
    log.warn('coalescer recovery: a terminated coalescer’s pending events offered again', {
      coalescerId: info.workflowId,
      runId: info.runId,
      events: offers.length,
      runKey: status?.state.pending?.runKey ?? running?.runKey,
      ...(status ? {} : { untaken: true }),
    });
  return offers.length;
}

/** A run's description, or undefined when it never started. */
async function describeRun(client: Client, runKey: string) {
  return client.workflow
    .getHandle(runKey)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
}

/** The end of a terminated chain's live run once it has closed (undefined while it runs), with the steered events its model never saw. */
export async function endOf(client: Client, running: Live, described?: Awaited<ReturnType<typeof describeRun>>): Promise<RunEnded | undefined> {
  const d = described ?? (await describeRun(client, running.runKey));
  if (!d || d.status.name === 'RUNNING') return undefined;
  const result = d.status.name === 'COMPLETED' ? ((await client.workflow.getHandle(running.runKey, d.runId).result()) as RunResult) : undefined;
  return runEndedOf(running, result);
}

/** A closed run's end as its coalescer takes it: its reason, the steered events its model was given (none known without a result), the rest in full. */
export function runEndedOf(running: Live, result: RunResult | undefined): RunEnded {
  const seen = result ? (result.steered ?? []) : undefined;
  const given = new Set(seen ?? []);
  const unseenEvents = running.events.filter(whole).filter((e) => running.steered?.includes(e.eventKey) && !given.has(e.eventKey));
  return {
    runKey: running.runKey,
    terminalReason: result?.terminalReason ?? 'failed',
    ...(seen ? { seen } : {}),
    ...(unseenEvents.length ? { unseenEvents } : {}),
    ...(result?.commitBegan ? { commitBegan: true } : {}),
  };
}

const NOTHING: Left['untaken'] = { offers: [], adopts: [], deliveries: [] };

/** One offer per event key, the first; each under its own offer id, or one named for the recovery when it had none. */
export function withOwnIds(offers: Offer[], runId: string): Offer[] {
  const keys = new Set<string>();
  return offers
    .filter((o) => !keys.has(o.event.eventKey) && keys.add(o.event.eventKey))
    .map((o) => ({
      event: o.event,
      offerId: o.offerId ?? recoveredOfferId(runId, o.event.eventKey),
      ...(o.restarts ? { restarts: o.restarts } : {}),
      ...(o.accepted ? { accepted: o.accepted } : {}),
    }));
}
