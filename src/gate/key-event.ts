import type { AgentDefinition } from '../agents/types';
import type { TriggerDefinition } from '../trigger/definition';
import { WakeEventSchema, type WakeEvent, type WakeEventInput } from '../core/event';
import type { TriggerRegistry } from './trigger-registry';
import { agentEventId } from '../core/ids';
import type { RunInput } from '../core/run-types';
import { GateInputError } from './errors';
import { fingerprint } from './fingerprint';
import { checkEventLimits } from './limits';
import { isoSeconds } from '../core/time';
import { bucketStartMs, eventKey, wakeKeyProblem } from './keys';

/** One agent's wake of an event: the agent, and its run input (one-call path) or offer (coalescing path). */
export interface PlannedWake {
  agent: AgentDefinition;
  /** `runKey` is `agent@eventKey` (or the name the trigger gives runs, `runKey`, on the one-call path): the run on the one-call path; a coalescing agent's events are deduplicated by their coalescer. */
  input: RunInput;
}

/** An event the gate has validated and keyed, with every wake it makes, ready for Temporal. */
export interface KeyedEvent {
  def: TriggerDefinition;
  event: WakeEvent;
  wakes: PlannedWake[];
  /** The first wake's input (most sources wake one agent). */
  input: RunInput;
}

const issuesOf = (err: { issues: { path: PropertyKey[]; message: string }[] }, prefix: string[] = []) =>
  err.issues.map((i) => ({ path: [...prefix, ...i.path.map(String)].join('.') || '(event)', message: i.message }));

/**
 * Validate an event against its trigger definition and every agent it wakes, and derive its logical
 * event key, its fingerprint and, per agent, the wake key: all without touching Temporal. `agent`
 * restricts the wake to one agent (a schedule names the agent it wakes); `nowMs` (default: this
 * process's clock) is the gate's clock for the `occurredAt` range (`src/gate/limits.ts`). Throws
 * {@link GateInputError} naming the field and the fix.
 */
export function keyEvent(registry: TriggerRegistry, raw: WakeEventInput | unknown, opts: { agent?: string; nowMs?: number } = {}): KeyedEvent {
  const parsed = WakeEventSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = issuesOf(parsed.error);
    throw new GateInputError('invalid_event', `invalid event: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  const event = parsed.data;
  checkEventLimits(event, opts.nowMs ?? Date.now()); // before anything walks the payload recursively
  const def = registry.get(event.source);
  if (!def) {
    throw new GateInputError('unknown_source', `unknown source "${event.source}": this deployment accepts ${registry.sources().join(', ')}`, [
      { path: 'source', message: 'unknown source' },
    ]);
  }
  if (def.eventTypes !== '*' && !def.eventTypes.includes(event.type)) {
    throw new GateInputError('unknown_event_type', `source "${def.source}" has no event type "${event.type}": use one of ${def.eventTypes.join(', ')}`, [
      { path: 'type', message: 'unknown event type' },
    ]);
  }
  const payload = def.payload.safeParse(event.payload);
  if (!payload.success) {
    const issues = issuesOf(payload.error, ['payload']);
    throw new GateInputError(
      'invalid_payload',
      `invalid payload for source "${def.source}": ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues,
    );
  }
  let agents = registry.agentsFor(def.source);
  if (def.wakes === 'named' && opts.agent === undefined) {
    throw new GateInputError('unknown_agent', `source "${def.source}" wakes the one agent named with the event: name it (--agent)`, [
      { path: 'agent', message: 'required' },
    ]);
  }
  if (opts.agent !== undefined) {
    agents = agents.filter((a) => a.policy.name === opts.agent);
    if (!agents.length) {
      throw new GateInputError('unknown_agent', `agent "${opts.agent}" is not woken by source "${def.source}" (its definition’s triggers must name it)`, [
        { path: 'agent', message: 'not woken by this source' },
      ]);
    }
  }
  if (!agents.length) throw new GateInputError('unknown_agent', `source "${def.source}" wakes no agent: no agent definition names it in its triggers`, []);

  const occurredMs = Date.parse(event.occurredAt);
  const bucketMs = bucketStartMs(occurredMs, def.bucket);
  const key = eventKey({ source: def.source, type: event.type, entity: event.entity, bucketStartMs: bucketMs });
  const print = fingerprint(payload.data, def.fingerprint);
  const keyed = { ...event, payload: payload.data };
  const wakes = agents.map((agent): PlannedWake => {
    const name = agent.policy.name;
    const own = agent.payload?.safeParse(payload.data);
    if (own && !own.success) {
      const issues = issuesOf(own.error, ['payload']);
      throw new GateInputError('invalid_payload', `invalid payload for agent "${name}": ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
    }
    let wakeKey: string;
    try {
      wakeKey = agent.wakeKey(keyed);
    } catch (err) {
      throw new GateInputError('invalid_wake_key', `agent "${name}" could not derive its wake key from this event: ${(err as Error).message}`, []);
    }
    const problem = wakeKeyProblem(wakeKey);
    if (problem) throw new GateInputError('invalid_wake_key', `agent "${name}": ${problem}`, [{ path: 'payload', message: problem }]);
    return {
      agent,
      input: {
        runKey: def.runKey && !agent.policy.coalesce ? def.runKey(name, { entity: event.entity, bucketStartMs: bucketMs }) : agentEventId(name, key),
        agent: name,
        wakeKey,
        eventKey: key,
        source: def.source,
        entity: event.entity,
        type: event.type,
        occurredAt: new Date(occurredMs).toISOString(),
        bucketStart: isoSeconds(bucketMs),
        payload: payload.data,
        fingerprint: print,
        origin: { kind: 'event' },
        ...(event.deliveryId ? { deliveryId: event.deliveryId } : {}),
        ...(event.version !== undefined ? { version: event.version } : {}),
      },
    };
  });
  return { def, event: keyed, wakes, input: wakes[0]!.input };
}
