import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createWakegate,
  defineAgent,
  defineEffect,
  defineTool,
  defineTrigger,
  z,
  type ModelTurn,
  type TurnReply,
  type TurnRequest,
  type RunStatus,
} from '../../src/index';
import type { ChatMessage } from '../../src/core/contracts';
import { coalescerQuery, statusQuery } from '../../src/core/messages';
import { awaitRun, movedRun } from '../../src/run/await-run';
import { wakeTrail } from '../../src/trail/trail';
import type { Gate } from '../../src/gate/gate';
import { steerRun } from '../../activities/coalescer/steer';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';

/*
 * Overlap `steer` end to end on the real dev server: a wake about an order that arrives while the
 * run about that order is live goes into that run (its model is given it before its next turn, and
 * the note it writes names it); one that arrives once the run is committing waits for a follow-up
 * run. The agent is a user's own, written against the public entry; its model is scripted, so the
 * test reads exactly what the model was given.
 */
const env = useDevEnv();

const orders = defineTrigger({
  source: 'orders',
  description: 'Something changed about an order.',
  eventTypes: '*',
  bucket: '1s',
  keyRationale: 'One logical event per (order, change type, second of its time): a redelivered notice carries the same time.',
  fingerprint: 'payload',
  payload: z.object({ change: z.string() }).passthrough(),
});

/** A latch the test opens: a tool or an effect waits on it, and says when it began waiting. */
function latch(open = false) {
  let release!: () => void;
  let reached!: () => void;
  const opened = new Promise<void>((r) => (release = r));
  const waiting = new Promise<void>((r) => (reached = r));
  if (open) release();
  return { release, waiting, pass: async () => (reached(), await opened) };
}

/** The changes named in the model's messages: the run's own event, and every event steered in since. */
function changesIn(messages: ChatMessage[]): string[] {
  const changes: string[] = [];
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const body = JSON.parse(m.content) as { event?: { payload?: { change?: string } }; newEvents?: { payload: { change: string } }[] };
    if (body.event?.payload?.change) changes.push(body.event.payload.change);
    for (const e of body.newEvents ?? []) changes.push(e.payload.change);
  }
  return changes;
}

/**
 * An order-notes agent with `whileRunning: 'steer'`: its scripted model looks the order up (the
 * `look` tool waits on `look`), then answers with a summary of every change it was given; the
 * `write_note` effect (waiting on `commit`) records that summary.
 */
function orderNotes(opts: {
  look: ReturnType<typeof latch>;
  commit: ReturnType<typeof latch>;
  turns?: number;
  whileRunning?: 'steer' | 'cancel' | 'buffer_one';
}) {
  const asked: TurnRequest[] = [];
  const notes: { effectKey: string; line: string }[] = [];
  const usage = { inputTokens: 20, outputTokens: 10 };
  const model: ModelTurn = async (req): Promise<TurnReply> => {
    asked.push(structuredClone(req));
    if (!req.messages.some((m) => m.role === 'tool')) {
      return { model: 'scripted', text: '', toolCalls: [{ id: `look-${asked.length}`, name: 'look', args: {} }], finishReason: 'tool-calls', usage };
    }
    const summary = `changes: ${changesIn(req.messages).join(', ')}`;
    return { model: 'scripted', text: JSON.stringify({ conclusion: 'commit', summary }), toolCalls: [], finishReason: 'stop', usage };
  };
  const look = defineTool({
    name: 'look',
    description: 'Look the order up.',
    input: z.object({}),
    run: async () => {
      await opts.look.pass();
      return { content: JSON.stringify({ found: true }), changed: false };
    },
  });
  const writeNote = defineEffect({
    name: 'write_note',
    description: 'Write one note about the order.',
    class: 'idempotent',
    reversible: true,
    input: z.object({ line: z.string().min(1) }),
    apply: async ({ line }, { effectKey }) => {
      await opts.commit.pass();
      if (!notes.some((n) => n.effectKey === effectKey)) notes.push({ effectKey, line });
      return { ref: effectKey };
    },
  });
  const agent = defineAgent({
    name: 'order-notes',
    description: 'Writes one note about an order, naming every change to it.',
    triggers: ['orders'],
    wakeKey: (event) => event.entity,
    wakeKeyRationale: 'One wake per order: every change to an order is worked into the run about it.',
    coalesce: { debounce: { period: '200ms', maxWait: '1s' }, whileRunning: opts.whileRunning ?? 'steer' },
    systemPrompt: 'Look the order up, then write one note that names every change you were told of.',
    model: { use: model, maxOutputTokens: 200, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
    budget: { turns: opts.turns ?? 6, tokens: 50_000, toolCalls: 4, wallClock: '2m', costUsd: 1 },
    tools: [look],
    effects: [writeNote],
    decide: (answer) => ({ summary: answer.summary, effects: [{ effect: 'write_note', args: { line: answer.summary } }] }),
  });
  return { app: createWakegate({ agents: [agent], triggers: [orders] }), asked, notes };
}

const order = (entity: string, change: string, at: string) => ({
  source: 'orders',
  entity,
  type: change,
  occurredAt: at,
  payload: { change },
  deliveryId: `${entity}-${change}`,
});
const statusOf = (workflowId: string) =>
  env.client.workflow
    .getHandle(workflowId)
    .query(statusQuery)
    .catch(() => undefined);

describe('overlap steer: a wake into the live run', () => {
  test('a second event mid-run is steered into the same run: absorbed, given to the model before its next turn, reflected in its effect', async () => {
    const look = latch();
    const { app, asked, notes } = orderNotes({ look, commit: latch(true) });
    const taskQueue = unique('steer');
    const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
    const entity = unique('order');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(order(entity, 'quantity', '2026-12-02T10:00:00Z'));
        assert.equal(first.decision, 'started');
        await look.waiting; // the run is live, in its first tool call
        const second = await gate.admit(order(entity, 'address', '2026-12-02T10:00:05Z'));
        assert.deepEqual([second.decision, second.runKey, second.runState], ['steered', first.runKey, 'running']);
        await eventually(
          () => statusOf(first.runKey),
          (s?: RunStatus) => s?.steered?.includes(second.eventKey) === true,
          15_000,
          'the run took the steered event',
        );
        assert.equal(asked.length, 1, 'the model has had one turn so far');
        look.release();
        const result = await awaitRun(env.client, first);
        assert.equal(result.terminalReason, 'success', result.summary);
        assert.deepEqual(
          result.absorbed!.map((e) => e.eventKey),
          [first.eventKey, second.eventKey],
        );
        assert.deepEqual(result.steered, [second.eventKey]);
        assert.ok(result.deliveryIds.includes(`${entity}-address`), 'the run lists the steered event’s delivery');
        // The model's second turn was given the new event, with its payload, after the tool's answer.
        assert.equal(asked.length, 2);
        const given = asked[1]!.messages.at(-1)!;
        assert.equal(given.role, 'user');
        assert.deepEqual(
          (JSON.parse(given.content) as { newEvents: { key: string; payload: unknown }[] }).newEvents.map((e) => [e.key, e.payload]),
          [[second.eventKey, { change: 'address' }]],
        );
        assert.equal(changesIn(asked[0]!.messages).includes('address'), false, 'the first turn predates it');
        assert.deepEqual(
          notes.map((n) => n.line),
          ['changes: quantity, address'],
        );
        assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`)).count, 1, 'one run');
        // A steer that reaches the run once it has closed (a retry whose first reply was lost, or one
        // sent as it ended): what it took is read from its result, anything else is refused.
        const event = (eventKey: string) => ({
          eventKey,
          source: 'orders',
          type: 'x',
          entity,
          occurredAt: '',
          bucketStart: '',
          deliveryIds: [],
          payload: {},
          fingerprint: '',
        });
        const retried = { coalescerId: first.coalescerId!, runKey: first.runKey, id: `steer:${second.eventKey}`, events: [event(second.eventKey)] };
        assert.deepEqual(await steerRun(env.client, retried), { accepted: [second.eventKey], refused: [] });
        const tooLate = { ...retried, id: 'steer:too-late', events: [event('too-late')] };
        assert.deepEqual(await steerRun(env.client, tooLate), { accepted: [], refused: ['too-late'] });
        // Redelivered after the run: the stored answer of the run it was steered into.
        const again = await gate.admit({ ...order(entity, 'address', '2026-12-02T10:00:05Z'), deliveryId: 'again' });
        assert.deepEqual([again.decision, again.original, again.runKey], ['completed', 'steered', first.runKey]);
        assert.deepEqual(again.result, result);
        // The decision trail (`wakegate explain`) names it steered into that run.
        const trail = await wakeTrail(env.client, app.agents, { agent: 'order-notes', wakeKey: entity });
        const shown = trail.events.find((e) => e.eventKey === second.eventKey)!;
        assert.deepEqual([shown.decision, shown.runKey, shown.finalRunKey], ['steered', first.runKey, undefined]);
        assert.match(shown.reason, /^steered into live run .* \(overlap steer\)/);
        assert.deepEqual(trail.runs.find((r) => r.runKey === first.runKey)!.steered, [second.eventKey]);
      },
      { activities: app.activities() },
    );
  });

  test('an event arriving while the run commits is refused by it and taken by one follow-up run', async () => {
    const commit = latch();
    const { app, notes } = orderNotes({ look: latch(true), commit });
    const taskQueue = unique('steer-commit');
    const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
    const entity = unique('order');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(order(entity, 'quantity', '2026-12-02T11:00:00Z'));
        await commit.waiting; // the run is in its commit stage, applying its note
        const late = await gate.admit(order(entity, 'cancelled', '2026-12-02T11:00:05Z'));
        assert.deepEqual([late.decision, late.runKey], ['steered', first.runKey]);
        // The run refuses it: the coalescer holds it in a follow-up batch for after the run.
        const coalescer = env.client.workflow.getHandle(first.coalescerId!);
        const waiting = await eventually(
          () => coalescer.query(coalescerQuery),
          (s) => s.state.pending?.events.some((e) => e.eventKey === late.eventKey) === true,
          15_000,
          'the refused event in the follow-up batch',
        );
        assert.equal(waiting.state.running?.steerClosed, true);
        const followUp = waiting.state.pending!.runKey;
        assert.notEqual(followUp, first.runKey);
        commit.release();
        const r1 = await awaitRun(env.client, first);
        assert.equal(r1.terminalReason, 'success', r1.summary);
        assert.deepEqual(
          r1.absorbed!.map((e) => e.eventKey),
          [first.eventKey],
        );
        assert.equal(r1.steered, undefined);
        // Waiting on the steered answer follows the refusal to the run that took the event.
        const r2 = await awaitRun(env.client, late);
        assert.equal(r2.runKey, followUp);
        assert.equal(r2.terminalReason, 'success', r2.summary);
        assert.deepEqual(
          r2.absorbed!.map((e) => e.eventKey),
          [late.eventKey],
        );
        assert.deepEqual(
          notes.map((n) => n.line),
          ['changes: quantity', 'changes: cancelled'],
        );
        assert.equal((await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeKey = "${entity}"`)).count, 2);
        // Redelivered: answered from the follow-up run that took it, not the run that refused it.
        const again = await gate.admit({ ...order(entity, 'cancelled', '2026-12-02T11:00:05Z'), deliveryId: 'again' });
        assert.deepEqual([again.decision, again.original, again.runKey], ['completed', 'steered', followUp]);
        assert.deepEqual(again.result, r2);
        const trail = await wakeTrail(env.client, app.agents, { agent: 'order-notes', wakeKey: entity });
        const event = trail.events.find((e) => e.eventKey === late.eventKey)!;
        assert.deepEqual([event.decision, event.runKey, event.finalRunKey], ['steered', first.runKey, followUp]);
        assert.match(event.reason, /refused it; follow-up run .* took it/);
      },
      { activities: app.activities() },
    );
  });

  test('a run that runs out of budget before its model is given a steered event does not list it: the follow-up run takes it and its model sees it', async () => {
    const look = latch();
    // One model turn: the first asks for `look`; the turn that would show the steered event is refused.
    const { app, asked } = orderNotes({ look, commit: latch(true), turns: 1 });
    const taskQueue = unique('steer-budget');
    const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
    const entity = unique('order');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const { first, second } = await steeredIntoLiveRun(gate, entity, look);
        look.release();
        const ended = await awaitRun(env.client, first);
        assert.equal(ended.terminalReason, 'budget_exhausted', ended.summary);
        assert.deepEqual(
          ended.absorbed!.map((e) => e.eventKey),
          [first.eventKey],
          'never listed by a run whose model did not see it',
        );
        assert.equal(ended.steered, undefined);
        const taken = await awaitRun(env.client, second);
        assert.notEqual(taken.runKey, first.runKey, 'the follow-up run');
        assert.ok(taken.absorbed!.some((e) => e.eventKey === second.eventKey));
        assert.ok(
          asked.some((req) => changesIn(req.messages).includes('address')),
          'a model was given it',
        );
      },
      { activities: app.activities() },
    );
  });

  test('cancel: a run that has begun committing is let finish, not cancelled; the restart takes only the newer event', async () => {
    const commit = latch();
    const { app, notes } = orderNotes({ look: latch(true), commit, whileRunning: 'cancel' });
    const taskQueue = unique('cancel-commit');
    const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
    const entity = unique('order');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(order(entity, 'quantity', '2026-12-02T12:00:00Z'));
        await commit.waiting; // the run is applying its note
        const late = await gate.admit(order(entity, 'cancelled', '2026-12-02T12:00:05Z'));
        assert.equal(late.decision, 'started', 'a restart batch');
        await new Promise((r) => setTimeout(r, 1000)); // the supersede reaches the committing run
        commit.release();
        const r1 = await awaitRun(env.client, first);
        assert.equal(r1.terminalReason, 'success', r1.summary);
        assert.equal(r1.supersededBy, undefined, 'not cancelled: it had begun committing');
        assert.equal(r1.commitBegan, true);
        const r2 = await awaitRun(env.client, late);
        assert.equal(r2.terminalReason, 'success', r2.summary);
        assert.deepEqual(
          r2.absorbed!.map((e) => e.eventKey),
          [late.eventKey],
          'the restart does not redo the committed event',
        );
        assert.deepEqual(
          notes.map((n) => n.line),
          ['changes: quantity', 'changes: cancelled'],
          'each change noted once',
        );
      },
      { activities: app.activities() },
    );
  });
});

/** `p`, or a failure naming `what` after `ms`: an event lost for good must fail the test, not hang it. */
/** Two events on one key: the first's run is held at its look, the second is steered into it and taken. */
async function steeredIntoLiveRun(gate: Gate, entity: string, look: ReturnType<typeof latch>) {
  const first = await gate.admit(order(entity, 'quantity', '2026-12-02T10:00:00Z'));
  await look.waiting;
  const second = await gate.admit(order(entity, 'address', '2026-12-02T10:00:05Z'));
  assert.equal(second.decision, 'steered');
  await eventually(
    () => statusOf(first.runKey),
    (st?: RunStatus) => st?.absorbed?.some((e) => e.eventKey === second.eventKey) === true,
    15_000,
    'the run took the steered event',
  );
  return { first, second };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The coalescer's current execution, once it is a new chain (not `terminatedRunId`) that is running: the recovery has reached it. */
async function recovered(coalescerId: string, terminatedRunId: string): Promise<void> {
  await eventually(
    () =>
      env.client.workflow
        .getHandle(coalescerId)
        .describe()
        .catch(() => undefined),
    (d) => d !== undefined && d.runId !== terminatedRunId && d.status.name === 'RUNNING',
    60_000,
    'the recovery of the terminated coalescer',
  );
}

describe('a coalescer terminated by hand while its live run holds a steered event', () => {
  for (const when of ['before', 'after'] as const) {
    test(`the run ends ${when} the recovery without showing the event: the new chain runs it`, async () => {
      const look = latch();
      const { app, asked } = orderNotes({ look, commit: latch(true), turns: 1 });
      const taskQueue = unique(`steer-terminated-${when}`);
      const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
      const entity = unique('order');
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const { first, second } = await steeredIntoLiveRun(gate, entity, look);
          const coalescer = env.client.workflow.getHandle(first.coalescerId!);
          const terminated = (await coalescer.describe()).runId;
          await coalescer.terminate('an operator stops the coalescer');
          if (when === 'after') await recovered(first.coalescerId!, terminated);
          // One model turn: the run ends budget_exhausted, its model never given the steered event.
          look.release();
          const ended = await awaitRun(env.client, first);
          assert.equal(ended.terminalReason, 'budget_exhausted');
          if (when === 'before') await recovered(first.coalescerId!, terminated);
          const taken = await within(awaitRun(env.client, second), 90_000, 'the steered event’s run');
          assert.notEqual(taken.runKey, first.runKey, 'a follow-up run');
          assert.ok(taken.absorbed!.some((e) => e.eventKey === second.eventKey));
          assert.ok(
            asked.some((req) => changesIn(req.messages).includes('address')),
            'a model was given it',
          );
          const again = await gate.admit({ ...order(entity, 'address', '2026-12-02T10:00:05Z'), deliveryId: 'again' });
          assert.equal(again.runKey, taken.runKey, 'a redelivery is answered from the run that took it');
        },
        { activities: app.activities() },
      );
    });
  }

  /**
   * The live run F holds a steered event its model has not seen; its coalescer is terminated by hand,
   * and a new event starts a new chain and its run G before the recovery: the recovery gives F to
   * that chain as a foreign run, which asks F to report its end. An operator then terminates F: it
   * sends nothing, so only the chain's watch of its foreign runs can find its end, and the steered
   * event runs in a follow-up run once G has ended. With `chainToo`, the chain holding F as foreign
   * is terminated by hand in turn before F: its recovery gives F (and G) to the next chain.
   */
  for (const chainToo of [false, true])
    test(`its live run adopted beside the new chain’s own${chainToo ? ', that chain terminated too' : ''}, then terminated by hand: the watch finds it, the new chain runs the event`, async () => {
      const look = latch();
      const { app, asked } = orderNotes({ look, commit: latch(true) });
      const taskQueue = unique(chainToo ? 'steer-foreign-twice' : 'steer-foreign');
      const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
      const entity = unique('order');
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          try {
            const { first, second } = await steeredIntoLiveRun(gate, entity, look);
            const coalescer = env.client.workflow.getHandle(first.coalescerId!);
            await coalescer.terminate('an operator stops the coalescer');
            // Before the recovery: a new chain, and its own run (held at its look, as F is).
            const third = await gate.admit(order(entity, 'price', '2026-12-02T10:00:10Z'));
            assert.equal(third.decision, 'started');
            await eventually(
              () => statusOf(third.runKey),
              (st?: RunStatus) => st !== undefined,
              15_000,
              'the new chain’s run is live',
            );
            // The supervisor's recovery gives F to the new chain, which keeps its own run live.
            const state = await eventually(
              () => coalescer.query(coalescerQuery).then((s) => s.state),
              (st) => st.foreign !== undefined && st.foreign.length > 0,
              60_000,
              'the recovery gives the terminated chain’s live run to the new chain',
            );
            assert.equal(state.running?.runKey, third.runKey, 'the new chain keeps its own run live');
            assert.deepEqual(
              state.foreign?.map((f) => f.runKey),
              [first.runKey],
              'and holds the adopted run as foreign',
            );
            const reportAsked = async () =>
              ((await env.client.workflow.getHandle(first.runKey).fetchHistory()).events ?? []).some(
                (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'reportEnd',
              );
            await eventually(reportAsked, (yes) => yes, 15_000, 'the adopted run is asked to report its end');
            if (chainToo) {
              const secondChain = (await coalescer.describe()).runId;
              await coalescer.terminate('an operator stops the new chain too');
              await recovered(first.coalescerId!, secondChain);
              const next = await eventually(
                () => coalescer.query(coalescerQuery).then((s) => s.state),
                (st) => st.foreign?.some((f) => f.runKey === first.runKey) === true,
                60_000,
                'the next chain holds the foreign run of the chain terminated too',
              );
              assert.equal(next.running?.runKey, third.runKey, 'and the terminated chain’s own live run as its live run');
            }
            // As from the Web UI: a terminated run tells no one.
            await env.client.workflow.getHandle(first.runKey).terminate('an operator stops it');
            look.release();
            // F's end, found by the watch, moves the event to a follow-up batch (a caller waiting on F
            // would fail with it: it was terminated); that run starts once G has ended.
            const moved = await eventually(
              () => movedRun(env.client, first.coalescerId!, second.eventKey, first.runKey),
              (k) => k !== undefined,
              30_000,
              'the coalescer moves the steered event from the terminated run',
            );
            const taken = await within(awaitRun(env.client, { ...second, runKey: moved! }), 40_000, 'the steered event’s run');
            assert.equal(taken.runKey, moved);
            assert.ok(taken.absorbed!.some((e) => e.eventKey === second.eventKey));
            assert.ok(
              asked.some((req) => changesIn(req.messages).includes('address')),
              'a model was given it (F never was: terminated while its look waited)',
            );
          } finally {
            look.release(); // a failure must not leave the worker waiting on the held looks
          }
        },
        { activities: app.activities() },
      );
    });

  test('buffer_one: the batch waiting when its coalescer was terminated starts only after the live run ends', async () => {
    const look = latch();
    const { app } = orderNotes({ look, commit: latch(true), whileRunning: 'buffer_one' });
    const taskQueue = unique('buffer-terminated');
    const gate = app.gate(env.client, taskQueue, { decisionWaitMs: 20_000 });
    const entity = unique('order');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(order(entity, 'quantity', '2026-12-02T10:00:00Z'));
        await look.waiting;
        const second = await gate.admit(order(entity, 'address', '2026-12-02T10:00:05Z'));
        assert.equal(second.decision, 'started', 'a batch that waits for the live run');
        const coalescer = env.client.workflow.getHandle(first.coalescerId!);
        const terminated = (await coalescer.describe()).runId;
        await coalescer.terminate('an operator stops the coalescer');
        await recovered(first.coalescerId!, terminated);
        // The recovered batch is offered again; it must wait for the live run, as it did before.
        await new Promise((r) => setTimeout(r, 3000));
        const live: string[] = [];
        for await (const w of env.client.workflow.list({ query: `WorkflowType = "runWorkflow" AND WakeKey = "${entity}" AND ExecutionStatus = "Running"` }))
          live.push(w.workflowId);
        assert.deepEqual(live, [first.runKey], 'one run of the key at a time');
        look.release();
        const ended = await awaitRun(env.client, first);
        const next = await within(awaitRun(env.client, second), 90_000, 'the waiting batch’s run');
        assert.notEqual(next.runKey, first.runKey);
        // The live run tells its coalescer it has ended (its work and commit done), then closes: the
        // next run may start in between, never before that word.
        const told = ((await env.client.workflow.getHandle(first.runKey).fetchHistory()).events ?? []).find(
          (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'runEnded',
        );
        assert.ok(told?.eventTime, 'the live run told its coalescer it ended');
        const b = await env.client.workflow.getHandle(next.runKey).describe();
        const toldMs = Number(told.eventTime.seconds) * 1000 + Math.floor((told.eventTime.nanos ?? 0) / 1e6);
        assert.ok(b.startTime.getTime() >= toldMs, `the next run started after the live one ended (${ended.terminalReason})`);
      },
      { activities: app.activities() },
    );
  });
});
