import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { EffectOutcome } from '../../src/core/contracts';
import type { RunInput, RunResult } from '../../src/core/run-types';
import type { WakeAnswer } from '../../src/core/decision';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { runCli } from '../helpers/cli';
import { trackerService } from '../../examples/incident-triage/tracker';
import ticketApp from '../fixtures/ticket-app';
import { coalescerQuery } from '../../src/core/messages';

/*
 * Once, whoever presses the button: an agent written against the public entry alone
 * (test/fixtures/ticket-app.ts) files tickets in a tracker that takes no idempotency key, then posts
 * a note the tracker can refuse (the run fails after its ticket landed). On the real dev server, the
 * paths senders and operators open: a redelivery after a failure, a reset from the first workflow
 * task, a replay beside a redelivery, a replay run twice, a replay with no `--reason` beside killed
 * and superseded runs, a replay of a run with events skipped on it. Each ends with one ticket per
 * incident.
 */
const env = useDevEnv();
const tracker = trackerService();
/** Notes by reference (idempotent: a second PUT of one reference changes nothing). */
const notes = new Map<string, string>();
/** The tracker refuses every note (403) while this is set: the failure after the ticket. */
let notesDown = false;
/** The tracker refuses every new ticket (403) while this is set. */
let ticketsDown = false;
let trackerUrl = '';

before(async () => {
  await env.ready();
  tracker.app.addHook('onRequest', async (req, reply) => {
    if (ticketsDown && req.method === 'POST' && req.url.startsWith('/tickets')) await reply.code(403).send({ error: 'tickets are disabled for this project' });
  });
  tracker.app.put<{ Body: { reference?: string; text?: string } }>('/notes', async (req, reply) => {
    if (notesDown) return reply.code(403).send({ error: 'notes are disabled for this project' });
    notes.set(String(req.body?.reference), String(req.body?.text));
    return { id: `note-${notes.size}` };
  });
  trackerUrl = await tracker.start();
  process.env.TICKET_TRACKER_URL = trackerUrl;
});
after(async () => {
  await tracker.close();
});

const ticketsFor = (title: string) => tracker.tickets.filter((t) => t.title === title);
const committed = (r: RunResult) => (r.output as { committed: EffectOutcome[] }).committed.map((e) => [e.name, e.outcome]);
const cliEnv = (taskQueue: string) => ({
  TEMPORAL_ADDRESS: env.server.address,
  WAKEGATE_APP: 'test/fixtures/ticket-app.ts',
  WAKEGATE_TASK_QUEUE: taskQueue,
  TICKET_TRACKER_URL: trackerUrl,
});

/** One incident: the same event each time it is delivered (a redelivery keeps its time). */
function incident(agent: string, service: string, opts: { holdMs?: number; at?: string } = {}) {
  const title = `${service} is down (${randomUUID().slice(0, 6)})`;
  const event = (deliveryId: string) => ({
    source: 'tickets',
    entity: service,
    type: 'incident.opened',
    occurredAt: opts.at ?? '2026-12-06T09:00:00Z',
    payload: { service, title, ...(opts.holdMs ? { holdMs: opts.holdMs } : {}) },
    deliveryId,
  });
  return { agent, title, event };
}

/** A worker of the fixture's deployment on a task queue of the test's own, and a gate to it (closed after). */
async function withTicketWorker(prefix: string, fn: (gate: ReturnType<typeof ticketApp.gate>, taskQueue: string) => Promise<void>): Promise<void> {
  const taskQueue = unique(prefix);
  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const gate = ticketApp.gate(env.client, taskQueue);
      await fn(gate, taskQueue).finally(() => gate.close());
    },
    { activities: ticketApp.activities() },
  );
}

/** Deliver an incident to its agent alone (every agent of the fixture listens to `tickets`). */
async function admit(gate: ReturnType<typeof ticketApp.gate>, inc: ReturnType<typeof incident>, deliveryId: string): Promise<WakeAnswer> {
  const answer = await gate.admit(inc.event(deliveryId), { agent: inc.agent });
  assert.equal(answer.wakes.length, 1);
  return answer.wakes[0]!;
}

/** The latest execution's result of a workflow ID, waiting for an execution other than `notRunId` when given. */
async function latest(workflowId: string, notRunId?: string): Promise<{ runId: string; result?: RunResult; failed?: string }> {
  const d = await eventually(
    () => env.client.workflow.getHandle(workflowId).describe(),
    (x) => x.runId !== notRunId,
    30_000,
    `a new execution of ${workflowId}`,
  );
  try {
    return { runId: d.runId, result: (await env.client.workflow.getHandle(workflowId, d.runId).result()) as RunResult };
  } catch (err) {
    if (err instanceof WorkflowFailedError) return { runId: d.runId, failed: String(err.cause?.message ?? err.message) };
    throw err;
  }
}

/**
 * Reset one execution, as the Web UI's reset does, to its first workflow task or (`atFirstEffect`)
 * to the workflow task that scheduled its first effect, past its start; the new execution's run ID.
 */
async function resetToFirstTask(workflowId: string, runId: string, reason: string, atFirstEffect = false): Promise<{ runId?: string | null }> {
  const { EventType } = temporal.api.enums.v1;
  const events = (await env.client.workflow.getHandle(workflowId, runId).fetchHistory()).events!;
  const firstEffect = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'commitEffect');
  const tasks = events.slice(0, atFirstEffect ? firstEffect : events.length).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const task = atFirstEffect ? tasks[tasks.length - 1]! : tasks[0]!;
  return env.client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId, runId },
    reason,
    workflowTaskFinishEventId: task.eventId,
    requestId: randomUUID(),
  });
}

async function executions(workflowId: string): Promise<number> {
  let n = 0;
  for await (const _ of env.client.workflow.list({ query: `WorkflowId = ${JSON.stringify(workflowId)}` })) n++;
  return n;
}

test('a redelivery after a failure starts the run again under the same effect keys: one ticket, then the note once the tracker takes it', async () => {
  await withTicketWorker('redeliver', async (gate) => {
    const inc = incident('ticket-filer', unique('api'));
    notesDown = true;
    const first = await admit(gate, inc, 'd1');
    assert.equal(first.decision, 'started');
    const one = await latest(first.runKey!);
    assert.ok(one.failed, 'the note was refused after the ticket landed');
    assert.equal(ticketsFor(inc.title).length, 1);

    const again = await admit(gate, inc, 'd2');
    assert.equal(again.decision, 'started', 'a failed run runs again on a redelivery');
    const two = await latest(first.runKey!, one.runId);
    assert.ok(two.failed);
    assert.equal(ticketsFor(inc.title).length, 1, 'the restart found the ticket its failed execution filed');

    notesDown = false;
    const third = await admit(gate, inc, 'd3');
    assert.equal(third.decision, 'started');
    const three = await latest(first.runKey!, two.runId);
    assert.equal(three.result?.terminalReason, 'success', three.result?.summary);
    assert.deepEqual(committed(three.result!), [
      ['file_ticket', 'reconciled_landed'],
      ['post_note', 'applied'],
    ]);
    assert.equal(ticketsFor(inc.title).length, 1, 'one ticket for the incident');

    const fourth = await admit(gate, inc, 'd4');
    assert.equal(fourth.decision, 'completed', 'a run that succeeded is answered from its result');
    assert.equal(await executions(first.runKey!), 3);
  });
});

test('a reset from the first workflow task (as the Web UI does) finds the ticket the run filed, and files none', async () => {
  await withTicketWorker('reset', async (gate) => {
    const inc = incident('ticket-filer', unique('db'));
    const answer = await admit(gate, inc, 'd1');
    const done = await latest(answer.runKey!);
    assert.equal(done.result?.terminalReason, 'success');
    assert.equal(ticketsFor(inc.title).length, 1);

    const reset = await resetToFirstTask(answer.runKey!, done.runId, 'an operator resets the run to its first workflow task');
    const again = await latest(answer.runKey!, done.runId);
    assert.equal(again.runId, reset.runId);
    assert.equal(again.result?.terminalReason, 'success', again.result?.summary);
    assert.deepEqual(committed(again.result!), [
      ['file_ticket', 'reconciled_landed'],
      ['post_note', 'applied'],
    ]);
    assert.equal(ticketsFor(inc.title).length, 1, 'the reset run looked before it filed');
  });
});

/** The batch run an answer named, once it has started (after the debounce) and closed. */
async function batchRunDone(runKey: string) {
  await eventually(
    () =>
      env.client.workflow
        .getHandle(runKey)
        .describe()
        .catch(() => undefined),
    (d) => d !== undefined,
    15_000,
    'the batch run',
  );
  return latest(runKey);
}

/*
 * A coalescer reset from the Web UI takes again every offer after the reset point (Temporal reapplies
 * them: tools/probes/reset-reapply.ts) and decides them afresh. Each batch it then starts meets the
 * run its discarded branch started under the same ID: the events that run took are its own, and
 * never run again under a new ID (the effects they led to carry that run's keys).
 */
for (const incidents of [1, 2])
  test(`a coalescer reset from the Web UI after its ${incidents === 1 ? 'run' : 'two runs'} filed their tickets: no event runs again`, async () => {
    await withTicketWorker(`reset-coalescer-${incidents}`, async (gate, taskQueue) => {
      const service = unique('search');
      const incs = Array.from({ length: incidents }, (_, i) => incident('ticket-skipper', service, { at: `2026-12-06T09:0${i}:00Z` }));
      const answers: WakeAnswer[] = [];
      for (const inc of incs) {
        const answer = await admit(gate, inc, 'd1');
        assert.equal(answer.decision, 'started');
        const done = await batchRunDone(answer.runKey!);
        assert.equal(done.result?.terminalReason, 'success', done.result?.summary);
        assert.equal(ticketsFor(inc.title).length, 1);
        answers.push(answer);
      }
      // The coalescer, idle now, reset to its first workflow task: its later offers are taken again.
      const coalescerId = answers[0]!.coalescerId!;
      const before = await env.client.workflow.getHandle(coalescerId).describe();
      const reset = await resetToFirstTask(coalescerId, before.runId, 'an operator resets the coalescer to its first workflow task');
      assert.ok(reset.runId);
      // Past the debounce and the runs a second batch would take: settled once nothing waits or runs.
      await eventually(
        () =>
          env.client.workflow
            .getHandle(coalescerId, reset.runId!)
            .query(coalescerQuery)
            .then((s) => s.state),
        (st) => st.pending === undefined && st.running === undefined,
        30_000,
        'the reset coalescer settles',
      );
      await new Promise((r) => setTimeout(r, 2000));
      const runs: string[] = [];
      for await (const w of env.client.workflow.list({ query: `WorkflowType = "runWorkflow" AND TaskQueue = "${taskQueue}" AND WakeKey = "${service}"` }))
        runs.push(w.workflowId);
      assert.deepEqual(runs.sort(), answers.map((a) => a.runKey).sort(), 'no run beside those the events had');
      for (const inc of incs) assert.equal(ticketsFor(inc.title).length, 1, 'one ticket for each incident');
      const again = await admit(gate, incs.at(-1)!, 'd2');
      assert.equal(again.runKey, answers.at(-1)!.runKey, 'a redelivery is answered from the run that took it');
    });
  });

test('a reset of an older execution (the Web UI lets a person pick any) finds the ticket a later one filed under a moved key', async () => {
  await withTicketWorker('reset-older', async (gate, taskQueue) => {
    const service = unique('queue');
    const inc = incident('ticket-filer', service);
    ticketsDown = true;
    const answer = await admit(gate, inc, 'd1');
    const failed = await latest(answer.runKey!);
    ticketsDown = false;
    assert.match(failed.failed ?? '', /403/, 'the tracker refused the ticket outright');
    // The replay files it under the slot's next key (the refused key may be remembered as refused).
    const replay = await runCli(['replay', 'ticket-filer', '--since', '1h', '--wake-key', service], cliEnv(taskQueue), 90_000);
    assert.equal(replay.code, 0, replay.stderr);
    const replayed = await latest(answer.runKey!, failed.runId);
    assert.equal(replayed.result?.terminalReason, 'success', replayed.result?.summary);
    assert.equal(ticketsFor(inc.title).length, 1);
    assert.match(ticketsFor(inc.title)[0]!.reference, /#file_ticket@n0\.r1$/);

    // An operator resets the first, failed execution: its input knows nothing of the moved key.
    const reset = await resetToFirstTask(answer.runKey!, failed.runId, 'an operator resets the first execution');
    const again = await latest(answer.runKey!, replayed.runId);
    assert.equal(again.runId, reset.runId);
    assert.equal(again.result?.terminalReason, 'success', again.result?.summary ?? again.failed);
    assert.deepEqual(committed(again.result!), [
      ['file_ticket', 'reconciled_landed'],
      ['post_note', 'applied'],
    ]);
    assert.equal(ticketsFor(inc.title).length, 1, 'the reset execution looked under the key the replay filed under');

    // Reset past its start, to the task that scheduled its effect: the execution replays its start's
    // recorded result (no keys read across the run), so it carries out nothing; a redelivery then runs it.
    const past = await resetToFirstTask(answer.runKey!, failed.runId, 'an operator retries the failed step', true);
    const refused = await latest(answer.runKey!, again.runId);
    assert.equal(refused.runId, past.runId);
    assert.match(refused.failed ?? '', /reset past its first step/, refused.result?.summary);
    assert.equal(ticketsFor(inc.title).length, 1, 'nothing filed under the stale key');
    const redelivered = await admit(gate, inc, 'd2');
    assert.equal(redelivered.decision, 'started');
    const last = await latest(answer.runKey!, refused.runId);
    assert.deepEqual(committed(last.result!), [
      ['file_ticket', 'reconciled_landed'],
      ['post_note', 'applied'],
    ]);
    assert.equal(ticketsFor(inc.title).length, 1);
  });
});

test('a replay beside a redelivery: one execution at a time, a redelivery answered from the replay, and a second replay starts nothing', async () => {
  await withTicketWorker('beside', async (gate, taskQueue) => {
    const service = unique('web');
    const inc = incident('ticket-filer', service, { holdMs: 3000 });
    notesDown = true;
    const answer = await admit(gate, inc, 'd1');
    const failed = await latest(answer.runKey!);
    assert.ok(failed.failed);
    notesDown = false;

    const replay = await runCli(['replay', 'ticket-filer', '--since', '1h', '--wake-key', service], cliEnv(taskQueue), 90_000);
    assert.equal(replay.code, 0, replay.stderr);
    const runs = replay.json.runs as { of: string; decision: string; epoch: string }[];
    assert.deepEqual(
      runs.map((r) => [r.of, r.decision, r.epoch]),
      [[answer.runKey, 'started', `after:${failed.runId}`]],
    );
    // The replay holds 3 s in its precheck: a redelivery now meets it open.
    const beside = await admit(gate, inc, 'd2');
    assert.equal(beside.decision, 'in_progress', 'the replay holds the workflow ID: the redelivery runs nothing beside it');
    const replayed = await latest(answer.runKey!, failed.runId);
    assert.equal(replayed.result?.terminalReason, 'success', replayed.result?.summary);
    assert.deepEqual(committed(replayed.result!), [
      ['file_ticket', 'reconciled_landed'],
      ['post_note', 'applied'],
    ]);
    const afterwards = await admit(gate, inc, 'd3');
    assert.equal(afterwards.decision, 'completed', "answered from the replay's result");
    assert.equal(afterwards.runId, replayed.runId);

    // The same command again, as on another day: the replay succeeded, so nothing runs and nothing is paid.
    const twice = await runCli(['replay', 'ticket-filer', '--since', '1h', '--wake-key', service], cliEnv(taskQueue), 90_000);
    assert.equal(twice.code, 0, twice.stderr);
    assert.deepEqual(twice.json.runs, []);
    assert.match((twice.json.notReplayed as { why: string }[])[0]!.why, /already replayed/);
    assert.equal(await executions(answer.runKey!), 2, 'the failed execution and its one replay');
    assert.equal(ticketsFor(inc.title).length, 1);
    assert.equal([...notes.keys()].filter((k) => k.startsWith(answer.runKey!)).length, 1);
  });
});

test('replay with no --reason takes neither a killed run nor a superseded one; --include-cancelled takes the killed one only', async () => {
  await withTicketWorker('stopped', async (gate, taskQueue) => {
    // A run a person killed while it held.
    const killedService = unique('queue');
    const killedInc = incident('ticket-filer', killedService, { holdMs: 30_000 });
    const killed = await admit(gate, killedInc, 'd1');
    const kill = await runCli(['kill', killed.runKey!, '--reason', 'a loop', '--who', 'ana'], cliEnv(taskQueue));
    assert.equal(kill.code, 0, kill.stderr);
    assert.equal((await latest(killed.runKey!)).result?.terminalReason, 'cancelled');

    // A coalesced run superseded by a newer event (whileRunning: cancel); the restart files the ticket.
    const service = unique('cache');
    const older = incident('ticket-canceller', service, { holdMs: 30_000, at: '2026-12-06T09:00:00Z' });
    const newer = incident('ticket-canceller', service, { at: '2026-12-06T09:00:05Z' });
    const first = await admit(gate, older, 'd1');
    await eventually(
      () =>
        env.client.workflow
          .getHandle(first.runKey)
          .describe()
          .catch(() => undefined),
      (d) => d?.status.name === 'RUNNING',
      15_000,
      'the older run',
    );
    await admit(gate, newer, 'd2');
    const supersededId = first.runKey;
    const superseded = await latest(supersededId);
    assert.ok(superseded.result?.supersededBy, 'superseded by the restart');
    await eventually(
      () => Promise.resolve(ticketsFor(newer.title).length),
      (n) => n === 1,
      30_000,
      "the restart's ticket",
    );

    const filer = await runCli(['replay', 'ticket-filer', '--since', '1h', '--wake-key', killedService], cliEnv(taskQueue), 90_000);
    assert.equal(filer.code, 3, 'nothing to replay');
    assert.match(JSON.stringify(filer.json.notReplayed), /killed by ana: replay it only with --include-cancelled/);
    const canceller = await runCli(['replay', 'ticket-canceller', '--since', '1h', '--include-cancelled', '--wake-key', service], cliEnv(taskQueue), 90_000);
    assert.equal(canceller.code, 3);
    assert.match(JSON.stringify(canceller.json.notReplayed), /superseded by/);
    assert.equal(await executions(supersededId), 1, 'the superseded run never runs again');

    const asked = await runCli(['replay', 'ticket-filer', '--since', '1h', '--include-cancelled', '--wake-key', killedService], cliEnv(taskQueue), 90_000);
    assert.equal(asked.code, 0, asked.stderr);
    assert.deepEqual(
      (asked.json.runs as { of: string; decision: string }[]).map((r) => [r.of, r.decision]),
      [[killed.runKey, 'started']],
    );
    await runCli(['kill', killed.runKey!, '--reason', 'still a loop'], cliEnv(taskQueue));
    assert.equal(ticketsFor(older.title).length + ticketsFor(newer.title).length, 1, 'one ticket for the outage');
  });
});

test('a replay of a run that failed under whileRunning: skip runs the events skipped on it too', async () => {
  await withTicketWorker('skipped', async (gate, taskQueue) => {
    const service = unique('search');
    const opener = incident('ticket-skipper', service, { holdMs: 4000, at: '2026-12-06T09:00:00Z' });
    notesDown = true;
    const a = await admit(gate, opener, 'd1');
    const runKey = a.runKey;
    await eventually(
      () =>
        env.client.workflow
          .getHandle(runKey)
          .describe()
          .catch(() => undefined),
      (d) => d?.status.name === 'RUNNING',
      15_000,
      'the run',
    );
    const skipped = await Promise.all(
      ['2026-12-06T09:00:02Z', '2026-12-06T09:00:03Z'].map((at, i) => admit(gate, incident('ticket-skipper', service, { at }), `s${i}`)),
    );
    assert.deepEqual(
      skipped.map((s) => s.decision),
      ['skipped', 'skipped'],
    );
    const failed = await latest(runKey);
    assert.ok(failed.failed);
    notesDown = false;

    const replay = await runCli(['replay', 'ticket-skipper', '--since', '1h', '--wake-key', service], cliEnv(taskQueue), 90_000);
    assert.equal(replay.code, 0, replay.stderr);
    const replayed = await latest(runKey, failed.runId);
    assert.equal(replayed.result?.terminalReason, 'success', replayed.failed ?? replayed.result?.summary);
    const history = await env.client.workflow.getHandle(runKey, replayed.runId).fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    const { defaultPayloadConverter } = await import('@temporalio/common');
    const input = defaultPayloadConverter.fromPayload<RunInput>(started.input!.payloads![0]!);
    assert.equal(input.replay?.events?.length, 3, 'the opener and the two events skipped on the failed run');
    assert.deepEqual(input.replay?.events?.map((e) => e.occurredAt).sort(), [
      '2026-12-06T09:00:00.000Z',
      '2026-12-06T09:00:02.000Z',
      '2026-12-06T09:00:03.000Z',
    ]);
    assert.equal(ticketsFor(opener.title).length, 1);
  });
});
