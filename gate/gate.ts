import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import type { TriggerDefinition } from '../triggers/definition';
import { WakeEventSchema, type WakeEventInput } from '../triggers/event';
import type { TriggerRegistry } from '../triggers/registry';
import type { WakeInput, WakeResult } from '../workflows/types';
import type { wakeWorkflow } from '../workflows/wake';
import type { GateAnswer } from './decision';
import { DeliveryBatcher } from './delivery-batcher';
import { GateInputError } from './errors';
import { fingerprint } from './fingerprint';
import { checkEventLimits } from './limits';
import { bucketStartMs, eventKey, isoSeconds } from './keys';

export interface GateOptions {
  client: Client;
  taskQueue: string;
  registry: TriggerRegistry;
}

/** An event the gate has validated and keyed, ready for Temporal. */
export interface KeyedEvent {
  def: TriggerDefinition;
  input: WakeInput;
}

/**
 * Validate an event against its trigger definition and derive its key and fingerprint, without
 * touching Temporal. Throws {@link GateInputError} naming the field and the fix. `nowMs` (default:
 * this process's clock) is the gate's clock for the `occurredAt` range (`gate/limits.ts`).
 */
export function keyEvent(registry: TriggerRegistry, raw: WakeEventInput | unknown, nowMs: number = Date.now()): KeyedEvent {
  const parsed = WakeEventSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(event)', message: i.message }));
    throw new GateInputError('invalid_event', `invalid event: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  const event = parsed.data;
  checkEventLimits(event, nowMs); // before anything walks the payload recursively
  const def = registry.get(event.source);
  if (!def) {
    throw new GateInputError(
      'unknown_source',
      `unknown source "${event.source}": this deployment accepts ${registry.sources().join(', ')}`,
      [{ path: 'source', message: 'unknown source' }],
    );
  }
  if (def.eventTypes !== '*' && !def.eventTypes.includes(event.type)) {
    throw new GateInputError(
      'unknown_event_type',
      `source "${def.source}" has no event type "${event.type}": use one of ${def.eventTypes.join(', ')}`,
      [{ path: 'type', message: 'unknown event type' }],
    );
  }
  const payload = def.payload.safeParse(event.payload);
  if (!payload.success) {
    const issues = payload.error.issues.map((i) => ({ path: ['payload', ...i.path].join('.'), message: i.message }));
    throw new GateInputError(
      'invalid_payload',
      `invalid payload for source "${def.source}": ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues,
    );
  }
  const occurredMs = Date.parse(event.occurredAt);
  const bucketMs = bucketStartMs(occurredMs, def.bucket);
  const key = eventKey({ source: def.source, type: event.type, entity: event.entity, bucketStartMs: bucketMs });
  return {
    def,
    input: {
      eventKey: key,
      source: def.source,
      entity: event.entity,
      type: event.type,
      occurredAt: new Date(occurredMs).toISOString(),
      bucketStart: isoSeconds(bucketMs),
      agent: def.agent,
      payload: payload.data,
      fingerprint: fingerprint(payload.data, def.fingerprint),
      deliveryId: event.deliveryId,
    },
  };
}

// Another caller can close the run between our start and our describe; a few rounds settle it.
const MAX_ROUNDS = 5;

/**
 * The gate every trigger passes: validate, derive the logical event key and the input fingerprint,
 * then one Temporal start with the key as workflow ID. Temporal's ID policies do the deduplication
 * (conflict FAIL: no second open run; reuse ALLOW_DUPLICATE_FAILED_ONLY: a completed run is never
 * repeated, a failed one may run again). Only a duplicate pays for a second call, to answer it.
 * Cheap and deterministic: no model is consulted.
 */
export class Gate {
  constructor(private readonly opts: GateOptions) {
    this.deliveries = new DeliveryBatcher(opts.client);
  }

  /** Validate and key an event without touching Temporal. Throws {@link GateInputError}. */
  key(raw: WakeEventInput | unknown): KeyedEvent {
    return keyEvent(this.opts.registry, raw);
  }

  /** Admit one delivery: validate, key, and start or answer from the run that holds the key. */
  async admit(raw: WakeEventInput | unknown): Promise<GateAnswer> {
    return this.admitKeyed(this.key(raw));
  }

  /**
   * Admit a keyed delivery. Concurrent deliveries of one event (same key and fingerprint) in this
   * process share one resolution against Temporal: the first asks, the others wait for its answer
   * and only record their own delivery id on the open run (batched by {@link DeliveryBatcher}). A
   * storm of N duplicates costs one start and a few signals instead of N starts, describes and
   * signals; every delivery gets the answer it would have got alone.
   */
  async admitKeyed(keyed: KeyedEvent): Promise<GateAnswer> {
    const { input } = keyed;
    const flightKey = `${input.eventKey}\n${input.fingerprint}`;
    const leader = this.inFlight.get(flightKey);
    if (!leader) {
      const flight = this.resolve(input);
      this.inFlight.set(flightKey, flight);
      try {
        return await flight;
      } finally {
        this.inFlight.delete(flightKey);
      }
    }
    const answer = await leader.catch(() => undefined);
    const mine = { ...answer, deliveryId: input.deliveryId } as GateAnswer;
    switch (answer?.decision) {
      case 'mismatch':
      case 'completed':
        return mine;
      case 'started':
      case 'in_progress':
        if (!input.deliveryId) return { ...mine, decision: 'in_progress' };
        try {
          await this.deliveries.record(input.eventKey, answer.runId, input.deliveryId);
          return { ...mine, decision: 'in_progress' };
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          return this.resolve(input); // the run closed meanwhile: ask Temporal afresh
        }
      default:
        return this.resolve(input); // the leader failed: this delivery asks on its own
    }
  }

  private readonly inFlight = new Map<string, Promise<GateAnswer>>();
  private readonly deliveries: DeliveryBatcher;

  private async resolve(input: WakeInput): Promise<GateAnswer> {
    const { client, taskQueue } = this.opts;
    const base = { eventKey: input.eventKey, workflowId: input.eventKey, fingerprint: input.fingerprint, deliveryId: input.deliveryId };
    for (let round = 0; round < MAX_ROUNDS; round++) {
      try {
        const handle = await client.workflow.start<typeof wakeWorkflow>('wakeWorkflow', {
          workflowId: input.eventKey,
          taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'FAIL',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
          // The start carries no search attributes: each indexed attribute makes the server's start
          // write heavier, so the run indexes itself in its first workflow task (workflows/wake.ts).
          memo: { fingerprint: input.fingerprint },
        });
        return { ...base, decision: 'started', runId: handle.firstExecutionRunId };
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }

      const handle = client.workflow.getHandle(input.eventKey);
      let desc: WorkflowExecutionDescription;
      try {
        desc = await handle.describe();
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) continue;
        throw err;
      }
      const stored = desc.memo?.fingerprint;
      if (typeof stored === 'string' && stored !== input.fingerprint) {
        return {
          ...base,
          decision: 'mismatch',
          runId: desc.runId,
          message:
            `event key ${input.eventKey} was already used with different inputs (fingerprint ${stored.slice(0, 12)}…, ` +
            `this delivery ${input.fingerprint.slice(0, 12)}…); nothing was started. Use a new key (entity, type or time) ` +
            `for a different event, or send the original inputs.`,
        };
      }
      switch (desc.status.name) {
        case 'RUNNING':
          if (input.deliveryId) {
            try {
              await this.deliveries.record(input.eventKey, desc.runId, input.deliveryId);
            } catch (err) {
              if (err instanceof WorkflowNotFoundError) continue; // closed meanwhile: answer from its outcome
              throw err;
            }
          }
          return { ...base, decision: 'in_progress', runId: desc.runId };
        case 'COMPLETED': {
          const result = (await client.workflow.getHandle(input.eventKey, desc.runId).result()) as WakeResult;
          return { ...base, decision: 'completed', runId: desc.runId, result };
        }
        default:
          // Failed, timed out, terminated: the reuse policy lets the next start through.
          continue;
      }
    }
    throw new Error(`gate: event key ${input.eventKey} changed state ${MAX_ROUNDS} times while answering; try again`);
  }
}
