import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import { startAgain } from './again-request';
import type { AbsorbedEvent, ReplayOf, RunInput } from '../core/run-types';
import type { EffectSlot } from '../core/effect-slots';
import type { KeyedEvent } from './key-event';
import type { PathContext } from './path-context';

/*
 * The gate's side of `wakegate replay` (src/shadow/replay.ts reads what to replay): a recorded run's
 * events, validated by today's definitions, run again as an execution again of the same logical run,
 * under the recorded run's own workflow ID, started on the one-call path whatever the agent's
 * coalescing (a replay is one recorded run run again, never mixed into a batch with live events).
 * One workflow ID for every execution of a run means Temporal itself keeps one open at a time
 * (conflict FAIL): a replay and a restart by a redelivery never run side by side, and a redelivery
 * after a replay is answered from it. Each replay follows one execution (`after`): when another
 * started since the request was read, nothing starts.
 */

/** What replaying one recorded run came to. */
export type ReplayAnswer =
  | { decision: 'started'; workflowId: string; runId: string; epoch: string }
  /** An execution of it is running now (a replay, or a restart by a redelivery): one at a time carries out its effects. */
  | { decision: 'in_progress'; workflowId: string; runId: string; epoch?: string }
  /** This epoch replayed it, or another execution followed the one this replay was to follow. */
  | { decision: 'already_replayed'; workflowId: string; runId: string; epoch?: string };

/** The recorded run to replay: its key, the execution it follows, its events, its slots' keys. */
export interface ReplayRequest {
  of: string;
  /** The run ID of the latest execution, read with the request: the replay follows it, or starts nothing. */
  after: string;
  /** The epoch an operator named (`--epoch`), or undefined: then `after:<run ID>`. */
  namedEpoch?: string;
  /** Each event as the gate keyed it today; the first is the recorded run's own (a batch's opener). */
  keyed: KeyedEvent[];
  agent: string;
  effects: EffectSlot[];
}

/**
 * The replay's run input: the recorded run's own event as keyed today (its event key, wake key and
 * fingerprint), under the recorded run's key, with every event of a batch (and those skipped on it)
 * and the keys its slots carry. No entity version: a replay is never stale.
 */
export function replayInput(req: ReplayRequest): RunInput {
  const own = (k: KeyedEvent) => k.wakes.find((w) => w.agent.policy.name === req.agent)!.input;
  const { version: _v, deliveryId: _d, ...base } = own(req.keyed[0]!);
  const events: AbsorbedEvent[] = req.keyed.map((k) => {
    const { eventKey, source, type, entity, occurredAt, payload } = own(k);
    return { eventKey, source, type, entity, occurredAt, payload, deliveryIds: [] };
  });
  const replay: ReplayOf = {
    epoch: req.namedEpoch ?? `after:${req.after}`,
    of: req.of,
    by: 'replay',
    effects: req.effects,
    ...(events.length > 1 ? { events } : {}),
  };
  return { ...base, runKey: req.of, origin: { kind: 'event' }, replay };
}

async function describe(client: Client, workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

const epochOf = (memo: Record<string, unknown> | undefined) => (typeof memo?.replayEpoch === 'string' ? memo.replayEpoch : undefined);

/** Why the replay may not start now (its answer), or undefined when it may. */
async function held(client: Client, input: RunInput & { replay: ReplayOf }, after: string): Promise<ReplayAnswer | undefined> {
  const { of, epoch } = input.replay;
  const latest = await describe(client, of);
  if (!latest) throw new Error(`replay of ${of}: no run with that workflow ID`);
  const at = { workflowId: of, runId: latest.runId, ...(epochOf(latest.memo) ? { epoch: epochOf(latest.memo) } : {}) };
  if (latest.status.name === 'RUNNING') return { decision: 'in_progress', ...at };
  if (latest.runId !== after || epochOf(latest.memo) === epoch) return { decision: 'already_replayed', ...at };
  if (epoch.startsWith('after:')) return undefined;
  // A named epoch: once per run, whichever execution ran it (older ones closed long ago: visibility lists them).
  for await (const w of client.workflow.list({ query: `WorkflowId = ${JSON.stringify(of)}` }))
    if (epochOf(w.memo) === epoch) return { decision: 'already_replayed', workflowId: of, runId: w.runId, epoch };
  return undefined;
}

/**
 * Start the replay of one recorded run, unless an execution of it is open, another followed the one
 * read, or this epoch replayed it already. The start is Temporal's guard twice over: conflict FAIL
 * keeps one execution open at a time, and the start's request ID, one per (run, epoch), makes every
 * process's start of one epoch the same start (the server answers a repeated request ID with the
 * execution it started, open or closed), whatever happens between a process's look and its start.
 * The memo's `replayBy` tells this process's start from another's.
 */
export async function admitReplay(ctx: PathContext, input: RunInput, after: string): Promise<ReplayAnswer> {
  const { client, taskQueue } = ctx;
  if (!input.replay) throw new Error(`admitReplay: ${input.runKey} is not a replay`);
  const replay = input as RunInput & { replay: ReplayOf };
  const before = await held(client, replay, after);
  if (before) return before;
  try {
    const { execution, mine } = await startAgain(client, taskQueue, replay, 'ALLOW_DUPLICATE');
    const at = { workflowId: input.runKey, runId: execution.runId, epoch: replay.replay.epoch };
    if (mine) return { decision: 'started', ...at };
    return { decision: execution.status.name === 'RUNNING' ? 'in_progress' : 'already_replayed', ...at };
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const now = await held(client, replay, after);
    if (now) return now;
    throw new Error(`replay of ${replay.replay.of}: its workflow ID was taken and then let go; try again`);
  }
}
