import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import { replayRunKey } from '../core/ids';
import type { AbsorbedEvent, ReplayOf, RunInput } from '../core/run-types';
import type { runWorkflow } from '../../workflows/run/workflow';
import type { KeyedEvent } from './key-event';
import type { PathContext } from './path-context';

/*
 * The gate's side of `wakegate replay` (src/shadow/replay.ts reads what to replay): a recorded run's
 * events, validated by today's definitions, become one run, `<recorded run>/replay`, started on the
 * one-call path whatever the agent's coalescing: a replay is one recorded run run again, never mixed
 * into a batch with live events. Temporal's workflow ID keeps one replay of a run open at a time
 * (conflict FAIL); its memo names the epoch, so the same epoch again starts nothing.
 */

/** What replaying one recorded run came to. */
export type ReplayAnswer =
  | { decision: 'started'; workflowId: string; runId: string }
  /** A replay of it is running now (this epoch's, or another's): one at a time carries out its effects. */
  | { decision: 'in_progress'; workflowId: string; runId: string; epoch?: string }
  /** This epoch replayed it before: that run. */
  | { decision: 'already_replayed'; workflowId: string; runId: string }
  /** The recorded run itself is running again (a redelivery restarted it): it holds its effect keys. */
  | { decision: 'original_running'; workflowId: string; runId: string };

/** The recorded run to replay: its key, its own event, every event it took (a batch's), the effects it began. */
export interface ReplayRequest {
  of: string;
  epoch: string;
  /** Each event as the gate keyed it today; the first is the recorded run's own (a batch's opener). */
  keyed: KeyedEvent[];
  agent: string;
  effects: ReplayOf['effects'];
}

/**
 * The replay's run input: the recorded run's own event as keyed today (its event key, wake key and
 * fingerprint), under `<recorded run>/replay`, with every event of a batch and the effects the
 * recorded run began. No entity version: a replay is never stale.
 */
export function replayInput(req: ReplayRequest): RunInput {
  const own = (k: KeyedEvent) => k.wakes.find((w) => w.agent.policy.name === req.agent)!.input;
  const { version: _v, deliveryId: _d, ...base } = own(req.keyed[0]!);
  const events: AbsorbedEvent[] = req.keyed.map((k) => {
    const { eventKey, source, type, entity, occurredAt, payload } = own(k);
    return { eventKey, source, type, entity, occurredAt, payload, deliveryIds: [] };
  });
  return {
    ...base,
    runKey: replayRunKey(req.of),
    origin: { kind: 'event' },
    replay: { epoch: req.epoch, of: req.of, effects: req.effects, ...(events.length > 1 ? { events } : {}) },
  };
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

/** The replay's answer from what holds its workflow ID now, or undefined when it may start. */
async function held(client: Client, input: RunInput & { replay: ReplayOf }): Promise<ReplayAnswer | undefined> {
  const { of, epoch } = input.replay;
  const original = await describe(client, of);
  if (original?.status.name === 'RUNNING') return { decision: 'original_running', workflowId: of, runId: original.runId };
  const latest = await describe(client, input.runKey);
  if (latest?.status.name === 'RUNNING') return { decision: 'in_progress', workflowId: input.runKey, runId: latest.runId, epoch: epochOf(latest.memo) };
  if (latest && epochOf(latest.memo) === epoch) return { decision: 'already_replayed', workflowId: input.runKey, runId: latest.runId };
  // Older replays of the run, closed: visibility lists each with its memo.
  for await (const w of client.workflow.list({ query: `WorkflowId = ${JSON.stringify(input.runKey)}` })) {
    if (epochOf(w.memo) === epoch) return { decision: 'already_replayed', workflowId: input.runKey, runId: w.runId };
  }
  return undefined;
}

/**
 * Start the replay of one recorded run, unless the recorded run is running again, a replay of it is
 * open, or this epoch replayed it already. The start itself is Temporal's guard: conflict FAIL keeps
 * one replay open at a time, whatever another process does between the look and the start.
 */
export async function admitReplay(ctx: PathContext, input: RunInput): Promise<ReplayAnswer> {
  const { client, taskQueue } = ctx;
  if (!input.replay) throw new Error(`admitReplay: ${input.runKey} is not a replay`);
  const replay = input as RunInput & { replay: ReplayOf };
  const before = await held(client, replay);
  if (before) return before;
  try {
    const handle = await client.workflow.start<typeof runWorkflow>('runWorkflow', {
      workflowId: input.runKey,
      taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      memo: { fingerprint: input.fingerprint, replayEpoch: replay.replay.epoch },
    });
    return { decision: 'started', workflowId: input.runKey, runId: handle.firstExecutionRunId };
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const now = await held(client, replay);
    if (now) return now;
    throw new Error(`replay of ${replay.replay.of}: its replay's ID was taken and then let go; try again`);
  }
}
