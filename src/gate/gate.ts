import type { Client } from '@temporalio/client';
import type { WakeEventInput } from '../core/event';
import type { TriggerRegistry } from './trigger-registry';
import { admitCoalesced } from '../coalescer/path';
import { isRefusal, type GateAnswer, type WakeAnswer } from '../core/decision';
import { DeliveryQueue } from '../run/delivery-queue';
import { keyEvent, type KeyedEvent, type PlannedWake } from './key-event';
import { admitOneCall } from './one-call';
import { admitReplay, type ReplayAnswer } from './replay';
import type { RunInput } from '../core/run-types';
import type { PathContext } from './path-context';
import { OfferQueue } from '../coalescer/offer-queue';
import { SupervisorLink } from '../supervisor/link';
import { startsRun } from '../supervisor/wake-tally';
import { defaultSupervisorPolicy } from '../supervisor/policy';
import { WakeAttr } from '../core/trace-context';
import { inSpan } from '../tracing/spans';

export { keyEvent, type KeyedEvent };

export interface GateOptions {
  client: Client;
  taskQueue: string;
  registry: TriggerRegistry;
  /** How long a delivery on the coalescing path waits for its decision before it is answered `accepted`, ms. Default 10 s. */
  decisionWaitMs?: number;
  /**
   * Workflow tasks waiting on the task queue past which a new wake key's first event goes by update
   * (answered at the workers' pace) instead of by start (answered at once). Default 1,000
   * (src/coalescer/backlog.ts); `Infinity` always starts.
   */
  startBacklog?: number;
  /** This process's line to the supervisor (default: one of its own with the default policy; `createWakegate`'s gate passes the deployment's). */
  supervisor?: SupervisorLink;
}

/** What followers of an in-flight admission are answered, from the leader's answer. */
const FOLLOWER: Partial<Record<WakeAnswer['decision'], WakeAnswer['decision']>> = {
  started: 'in_progress',
  coalesced: 'in_progress',
  skipped: 'skipped',
  steered: 'in_progress',
  in_progress: 'in_progress',
  accepted: 'in_progress',
  held: 'in_progress',
};

/**
 * The gate every trigger passes: validate, derive the logical event key and the input fingerprint,
 * and, for every agent the event wakes, its wake key; then per agent one of two paths:
 * - an agent without a coalescing policy: one Temporal start of its run for the event
 *   (`agent@eventKey`), the one-call path;
 * - a coalescing agent: an offer straight to the coalescer of (agent, wake key) (sent with
 *   the process's other offers to it), answered with its decision.
 * Dedup goes by the event key on both (Temporal's ID policies; the coalescer's dedup table), coalescing by the
 * wake key. Cheap and deterministic: no model is consulted.
 */
export class Gate {
  private readonly inFlight = new Map<string, Promise<WakeAnswer>>();
  private readonly ctx: PathContext;
  readonly supervisor: SupervisorLink;

  constructor(private readonly opts: GateOptions) {
    this.ctx = {
      client: opts.client,
      taskQueue: opts.taskQueue,
      deliveries: new DeliveryQueue(opts.client),
      offers: new OfferQueue(opts.client, opts.taskQueue, { startBacklog: opts.startBacklog }),
      decisionWaitMs: opts.decisionWaitMs ?? 10_000,
    };
    this.supervisor = opts.supervisor ?? new SupervisorLink({ client: opts.client, taskQueue: opts.taskQueue, policy: defaultSupervisorPolicy });
  }

  /** Send the wake counts this gate still holds to the supervisor (a one-shot caller, the CLI, before it exits). */
  close(): Promise<void> {
    return this.supervisor.close();
  }

  /** Validate and key an event without touching Temporal. Throws {@link GateInputError}. */
  key(raw: WakeEventInput | unknown, opts: { agent?: string } = {}): KeyedEvent {
    return keyEvent(this.opts.registry, raw, opts);
  }

  /** Admit one delivery: validate, key, and start or answer per agent. `agent` wakes only that agent (a schedule's). */
  async admit(raw: WakeEventInput | unknown, opts: { agent?: string } = {}): Promise<GateAnswer> {
    return this.admitKeyed(this.key(raw, opts));
  }

  /**
   * Admit a keyed delivery: every agent it wakes, in parallel. With tracing on, the delivery is a
   * span (`gate.admit`, the event's keys and the decision) and each agent's wake one under it
   * (`gate.wake`), under which its Temporal calls are made.
   */
  async admitKeyed(keyed: KeyedEvent): Promise<GateAnswer> {
    const { input } = keyed;
    const attributes = {
      [WakeAttr.source]: input.source,
      [WakeAttr.eventType]: input.type,
      [WakeAttr.entity]: input.entity,
      [WakeAttr.eventKey]: input.eventKey,
      [WakeAttr.deliveryId]: input.deliveryId,
    };
    return inSpan('gate.admit', { attributes }, async (span) => {
      const wakes = await Promise.all(keyed.wakes.map((w) => this.tracedWake(w)));
      const primary = wakes.find((w) => isRefusal(w.decision)) ?? wakes[0]!;
      span?.set({ [WakeAttr.decision]: primary.decision });
      return { ...primary, eventKey: input.eventKey, fingerprint: input.fingerprint, ...(input.deliveryId ? { deliveryId: input.deliveryId } : {}), wakes };
    });
  }

  /** One agent's wake in its span, with the decision and the run (or coalescer) that holds the event. */
  private tracedWake(wake: PlannedWake): Promise<WakeAnswer> {
    const attributes = { [WakeAttr.agent]: wake.agent.policy.name, [WakeAttr.wakeKey]: wake.input.wakeKey, [WakeAttr.eventKey]: wake.input.eventKey };
    return inSpan('gate.wake', { attributes }, async (span) => {
      const answer = await this.admitWake(wake);
      span?.set({
        [WakeAttr.decision]: answer.decision,
        [WakeAttr.runKey]: answer.runKey,
        [WakeAttr.coalescerId]: answer.coalescerId,
      });
      return answer;
    });
  }

  /**
   * One agent's wake. Concurrent deliveries of one event (same agent, key and fingerprint) in this
   * process share one resolution against Temporal: the first asks, the others wait for its answer
   * and only record their own delivery id where the event is held (several
   * to a signal, by {@link DeliveryQueue}). A storm of N duplicates costs one start and a few signals instead of N
   * starts, describes and signals; every delivery gets the answer it would have got alone.
   */
  private async admitWake(wake: PlannedWake): Promise<WakeAnswer> {
    const { input } = wake;
    const flightKey = `${input.runKey}\n${input.fingerprint}`;
    const leader = this.inFlight.get(flightKey);
    if (!leader) {
      const flight = this.resolve(wake);
      this.inFlight.set(flightKey, flight);
      try {
        return await flight;
      } finally {
        this.inFlight.delete(flightKey);
      }
    }
    const answer = await leader.catch(() => undefined);
    const follow = answer && FOLLOWER[answer.decision];
    if (!answer || (answer.decision !== 'mismatch' && answer.decision !== 'completed' && answer.decision !== 'stale' && !follow)) {
      return this.resolve(wake); // the leader failed: this delivery asks on its own
    }
    if (!follow) return answer;
    const mine: WakeAnswer = { ...answer, decision: follow, original: answer.decision };
    if (!input.deliveryId || follow === 'skipped') return mine;
    // Where the event is held: its run (one-call path, or a coalesced run that has started), or its coalescer.
    const [target, runId] =
      answer.coalescerId === undefined
        ? [answer.runKey, answer.runId]
        : answer.runState === 'running'
          ? [answer.runKey, answer.runId]
          : [answer.coalescerId!, undefined];
    try {
      await this.ctx.deliveries.record(target, runId, input.deliveryId, answer.coalescerId ? input.eventKey : undefined);
      return mine;
    } catch {
      return this.resolve(wake); // closed meanwhile: ask Temporal afresh
    }
  }

  /**
   * `wakegate replay`: start the replay of one recorded run (src/gate/replay.ts), past the
   * supervisor's part: refused when the agent is over a cap it refuses over; its run takes a permit
   * at its first step, and a halted fleet holds it there, as any run. It is not counted toward the
   * storm breaker: an operator's replay of many runs is not an upstream firing in a loop.
   */
  async admitReplay(input: RunInput, after: string): Promise<ReplayAnswer | { decision: 'refused'; message: string }> {
    const memo = await this.supervisor.memo();
    if (memo.mode === 'armed' && memo.capsFull.includes(input.agent) && this.supervisor.policy.overCap[input.agent] === 'refuse')
      return { decision: 'refused', message: `${input.agent} is over a rolling cap and its supervisor policy is refuse: replay it later` };
    return admitReplay(this.ctx, input, after);
  }

  /**
   * The supervisor's part at the gate, off Temporal's path: a cached read of its memo and, for a wake
   * that starts a run, a count sent with the others of its interval (src/supervisor/wake-tally.ts:
   * an event that joins a batch or a redelivery is no storm wake). Halted: the wake is admitted as
   * ever (durable, deduplicated) and its run holds at its first step; the answer says so. Over a cap
   * with policy `refuse`: refused, nothing started.
   */
  private async resolve({ agent, input }: PlannedWake): Promise<WakeAnswer> {
    const name = agent.policy.name;
    const memo = await this.supervisor.memo();
    if (memo.mode === 'armed' && memo.capsFull.includes(name) && this.supervisor.policy.overCap[name] === 'refuse') {
      return {
        decision: 'refused',
        agent: name,
        wakeKey: input.wakeKey,
        runKey: input.runKey,
        message: `${name} is over a rolling cap and its supervisor policy is refuse: nothing was started; send it again later (wakegate supervisor status)`,
      };
    }
    const policy = agent.policy.coalesce;
    const answer = await (policy ? admitCoalesced(this.ctx, input, policy) : admitOneCall(this.ctx, input));
    if (startsRun(answer.decision)) this.supervisor.noteWake(name);
    if (memo.mode === 'armed' || (answer.decision !== 'started' && answer.decision !== 'coalesced')) return answer;
    return {
      ...answer,
      ...(answer.decision === 'started' ? { decision: 'held' as const } : {}),
      held: { mode: memo.mode, ...(memo.tripId !== undefined ? { tripId: memo.tripId } : {}), reason: memo.tripReason ?? memo.mode },
    };
  }
}
