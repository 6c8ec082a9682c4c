import { isoSeconds } from './time';

/**
 * Workflow IDs and effect keys: pure, built in this one place, used by the gate and by workflow code
 * alike. Every ID is readable in the Web UI and stable across retries, crashes and replays, because
 * every part is: an agent name, a wake key, a logical event key (never a delivery id, a delivery
 * time or an attempt number).
 *
 * - `agent@eventKey`: what one agent does about one logical event. On the one-call path it is the
 *   run itself (a coalescing agent's events are deduplicated by its coalescer). Temporal refuses a
 *   second open execution of it, so duplicate deliveries cannot start twice.
 * - `agent@schedule/tick/<schedule id>-<nominal>`: a schedule's window on the one-call path, in place
 *   of `agent@eventKey`: Temporal's Schedule names the runs it starts so, and the schedule trigger's
 *   `runKey` (src/trigger/schedule.ts) gives the gate's runs of schedule events the same name.
 * - `agent#wakeKey`: the coalescer of one (agent, wake key).
 * - `agent#wakeKey@eventKey~chain.n`: a coalesced run, named after the event that opened its batch,
 *   its coalescer's chain of executions and the batch's number in it: unique for good, so a
 *   redelivery that opens a batch after its coalescer closed never meets an old run's ID.
 * - `runKey#effect@n<nth>`: one side effect of one run (the n-th of its name); the provider's idempotency key.
 */
export type EffectKey = string & { readonly __brand: 'EffectKey' };

/** Escape the separator so that distinct components never collide ("a/b" + "c" vs "a" + "b/c"). */
function component(s: string): string {
  return s.replace(/%/g, '%25').replace(/\//g, '%2F');
}

export interface EventKeyParts {
  source: string;
  type: string;
  entity: string;
  /** Start of the time bucket, epoch ms (UTC). */
  bucketStartMs: number;
}

/** The logical event key `source/type/entity/bucketStart` (the gate's, see src/gate/keys.ts). */
export function eventKey(parts: EventKeyParts): string {
  return [component(parts.source), component(parts.type), component(parts.entity), isoSeconds(parts.bucketStartMs)].join('/');
}

/** Agent names never contain `@` or `#`; wake keys have them escaped, so every ID splits one way only. */
function escapeWakeKey(s: string): string {
  return s.replace(/%/g, '%25').replace(/#/g, '%23').replace(/@/g, '%40');
}

/** The run of one agent for one logical event (one-call path). */
export function agentEventId(agent: string, eventKey: string): string {
  return `${agent}@${eventKey}`;
}

/**
 * A schedule's windows for an agent on the one-call path: the Temporal Schedule's action workflow ID.
 * Temporal appends `-<nominal, RFC 3339>` to it, so each window's run is
 * `<agent>@schedule/tick/<schedule id>-<nominal>`, and a window fired twice by the Schedule is refused by
 * Temporal itself (REJECT_DUPLICATE).
 */
export function scheduleRunKeyPrefix(agent: string, scheduleId: string): string {
  return `${agent}@schedule/tick/${component(scheduleId)}`;
}

/** The run of one window (nominal time, ISO seconds) of a schedule, as Temporal's Schedule names it. */
export function scheduleWindowRunKey(agent: string, scheduleId: string, nominal: string): string {
  return `${scheduleRunKeyPrefix(agent, scheduleId)}-${nominal}`;
}

/** The coalescer of one (agent, wake key). */
export function coalescerId(agent: string, wakeKey: string): string {
  return `${agent}#${escapeWakeKey(wakeKey)}`;
}

/** A coalesced run: the batch of (agent, wake key) named by `runToken` (see {@link batchRunToken}). */
export function batchRunKey(agent: string, wakeKey: string, runToken: string): string {
  return `${coalescerId(agent, wakeKey)}@${runToken}`;
}

/**
 * The run token a coalescer's dedup entry names (SeenEvent): stored as `~chain.n` when the entry's
 * own event opened the run. Undefined when no run took the event.
 */
export function seenRunToken(eventKey: string, stored: string | undefined): string | undefined {
  if (!stored) return undefined;
  return stored.startsWith('~') ? eventKey + stored : stored;
}

/**
 * A coalescer's chain of executions: the random end of its first execution's run ID (a UUIDv7 begins
 * with its time), so the runs of a chain started after a close are named apart from any earlier one's.
 */
export function chainOf(firstExecutionRunId: string): string {
  return firstExecutionRunId.replace(/-/g, '').slice(-8);
}

/** What follows `@` in a coalesced run's ID: the opening event key, the coalescer's chain, the batch's number in it. */
export function batchRunToken(openedBy: string, chain: string, n: number): string {
  return `${openedBy}~${chain}.${n.toString(36)}`;
}

/**
 * `runKey#effect@slot`: the run's own ID (which names the agent) plus the effect and its slot, `n<nth>`
 * (its place among the run's effects of that name; src/core/effect-slots.ts). Stable across
 * activity retries, worker crashes, resets, restarts and replays; two agents woken by one event
 * never share one.
 */
export function effectKey(runKey: string, effect: string, slot: number | string): EffectKey {
  return `${runKey}#${effect}@${slot}` as EffectKey;
}

/**
 * A shadow run's workflow ID: `shadow/<session>/<the recorded run's key>`. Never one the gate makes
 * (no run key starts with `shadow/`), so its effect keys are its own, and a second shadow session of
 * the same run is a run of its own.
 */
export function shadowRunKey(session: string, of: string): string {
  return `${SHADOW_PREFIX}${session}/${of}`;
}
export const SHADOW_PREFIX = 'shadow/';

/**
 * The supervisor of the fleet on one task queue: one per fleet, so each deployment (and each test's
 * task queue) has its own breaker. It is off every event's path: the gate reads its memo cached and
 * reports counts together per interval; runs lease permits in blocks (see src/supervisor/link.ts).
 */
export function supervisorId(taskQueue: string): string {
  return `wakegate-supervisor/${taskQueue}`;
}

/**
 * The rollout of one agent's candidate version on one task queue (workflows/rollout/): one per agent
 * and fleet, so each test's task queue has its own. Its memo holds the view a run's first step reads.
 */
export function rolloutId(taskQueue: string, agent: string): string {
  return `wakegate-rollout/${taskQueue}/${agent}`;
}
