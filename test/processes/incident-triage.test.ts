import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRequest } from 'fastify';
import { createWakegate, type CustomScheme, type Wakegate, type RunResult } from 'wakegate';
import { awaitRun } from '../../src/run/await-run';
import { loadConfig } from '../../src/config/config';
import { startIngress } from '../../src/processes/ingress-listeners';
import type { EffectOutcome } from '../../src/core/contracts';
import { incidentTriageOptions } from '../../examples/incident-triage/app';
import { trackerService, type Ticket, type TrackerService } from '../../examples/incident-triage/tracker';
import { SIGNATURE_HEADER, signTrackerDelivery, trackerSource, type AlertFired } from '../../examples/incident-triage/webhook';
import { fakeAnthropic, type AnthropicBlock, type AnthropicBehaviour } from '../fakes/anthropic';
import { useDevEnv, unique, withWorker } from '../helpers/env';
import { activityEvents, deferred, spawnWorker, type WorkerProcess } from '../helpers/worker-process';

/*
 * The incident-triage example (examples/incident-triage/), written against 'wakegate' alone, end to
 * end on a real dev server: a real Anthropic-format model client against a scripted fake, a ticket
 * tracker that takes no idempotency key (so filing a ticket is a `reconcile` effect), worker
 * processes SIGKILLed in the window between the tracker creating the ticket and the worker hearing
 * so (seed Test 2), and the tracker's own webhook signature scheme.
 */

const env = useDevEnv();
let tracker: TrackerService;
let trackerUrl: string;
let anthropicUrl: string;
let fake: ReturnType<typeof fakeAnthropic>;
let app: Wakegate;
const workers: WorkerProcess[] = [];

before(async () => {
  await env.ready();
  tracker = trackerService();
  trackerUrl = await tracker.start();
  fake = fakeAnthropic();
  anthropicUrl = await fake.start();
  app = createWakegate(incidentTriageOptions({ trackerUrl, model: { baseURL: anthropicUrl, apiKey: 'sk-ant-test', model: 'claude-test' } }));
});
after(async () => {
  for (const w of workers) await w.kill();
  await fake?.app.close();
  await tracker?.close();
});

const alert = (service: string, at = '2026-12-04T18:00:00Z') => ({
  source: 'incidents',
  entity: service,
  type: 'alert.fired',
  occurredAt: at,
  payload: { service, alert: 'error rate above 5% for 5 minutes' },
  deliveryId: unique('d'),
});
const toolUse = (id: string, input: unknown): AnthropicBehaviour => ({ reply: { content: [{ type: 'tool_use', id, name: 'search_errors', input }] } });
const final = (answer: { severity: string; title: string; summary: string }): AnthropicBehaviour => ({ reply: { content: JSON.stringify(answer) } });
const committed = (r: RunResult) => (r.output as { committed: EffectOutcome[] }).committed;
const ticketsOf = (title: string) => tracker.tickets.filter((t) => t.title === title);
/** The tool_result blocks the model was sent in one request. */
const toolResults = (body: { messages: { content: string | AnthropicBlock[] }[] }) =>
  body.messages
    .flatMap((m) => (typeof m.content === 'string' ? [] : m.content))
    .filter((b): b is Extract<AnthropicBlock, { type: 'tool_result' }> => b.type === 'tool_result');
const text = (c: string | { type: 'text'; text: string }[]) => (typeof c === 'string' ? c : c.map((b) => b.text).join(''));

describe('incident triage in process, against the fake Anthropic API', () => {
  test('a tool call, then the answer: success, exactly one ticket applied under the effect key; the model saw the tool’s JSON Schema', async () => {
    const taskQueue = unique('triage');
    const service = unique('checkout');
    const title = `Checkout errors ${service}`;
    const from = fake.requests.length;
    fake.script(toolUse('toolu_1', { service }), final({ severity: 'high', title, summary: 'TypeError spike after the deploy' }));
    const result = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => awaitRun(env.client, await app.gate(env.client, taskQueue).admit(alert(service))),
      { activities: app.activities() },
    );

    assert.equal(result.terminalReason, 'success', result.summary);
    const requests = fake.requests.slice(from);
    assert.equal(requests.length, 2, 'two model turns');
    assert.equal(requests[0]!.apiKey, 'sk-ant-test');
    const offered = requests[0]!.body.tools ?? [];
    assert.deepEqual(
      offered.map((t) => t.name),
      ['search_errors'],
      'the tool is given to the model; the effect is picked in code (decide), never given',
    );
    const schema = offered[0]!.input_schema as { type: string; properties: Record<string, { type: string; minLength?: number }>; required: string[] };
    assert.equal(schema.type, 'object');
    assert.equal(schema.properties.service?.type, 'string');
    assert.equal(schema.properties.service?.minLength, 1);
    assert.deepEqual(schema.required, ['service']);
    // The tool really ran against the tracker and its answer went back to the model.
    assert.deepEqual(
      tracker.errorReads.filter((s) => s === service),
      [service],
    );
    const [res] = toolResults(requests[1]!.body);
    assert.equal(res?.tool_use_id, 'toolu_1');
    assert.match(text(res!.content), /TypeError: cannot read properties/);

    const tickets = ticketsOf(title);
    assert.equal(tickets.length, 1, 'exactly one ticket');
    const [effect] = committed(result);
    assert.equal(effect!.name, 'file_ticket');
    assert.equal(effect!.outcome, 'applied');
    assert.equal(effect!.attempt, 1);
    assert.equal(effect!.ref, tickets[0]!.id);
    assert.equal(tickets[0]!.reference, effect!.effectKey, 'the ticket carries the effect key as its reference');
    assert.equal(tickets[0]!.severity, 'high');
  });

  test('severity none: no_op, no ticket', async () => {
    const taskQueue = unique('triage-none');
    const service = unique('search');
    const title = `Noise ${service}`;
    fake.script(toolUse('toolu_n', { service }), final({ severity: 'none', title, summary: 'known flaky check, nothing new' }));
    const result = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => awaitRun(env.client, await app.gate(env.client, taskQueue).admit(alert(service))),
      { activities: app.activities() },
    );
    assert.equal(result.terminalReason, 'no_op', result.summary);
    assert.equal(ticketsOf(title).length, 0);
  });

  test('a tool call with invalid arguments goes back to the model as an error; the next turn finishes the run', async () => {
    const taskQueue = unique('triage-bad-args');
    const service = unique('payments');
    const title = `Payments errors ${service}`;
    const from = fake.requests.length;
    const reads = tracker.errorReads.length;
    fake.script(toolUse('toolu_bad', {}), final({ severity: 'low', title, summary: 'could not read errors; filing low' }));
    const result = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => awaitRun(env.client, await app.gate(env.client, taskQueue).admit(alert(service))),
      { activities: app.activities() },
    );

    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(tracker.errorReads.length, reads, 'the tool never ran with arguments that do not parse');
    const requests = fake.requests.slice(from);
    assert.equal(requests.length, 2);
    const [res] = toolResults(requests[1]!.body);
    assert.equal(res?.tool_use_id, 'toolu_bad');
    assert.match(text(res!.content), /error/i);
    assert.match(text(res!.content), /service/, 'the error names the missing argument');
    assert.equal(ticketsOf(title).length, 1);
    assert.equal(committed(result)[0]!.outcome, 'applied');
  });
});

describe('seed Test 1 and the model proposing effects, in process', () => {
  test('seed Test 1: the same alert delivered again is answered from the run that took it: one ticket, no second model turn', async () => {
    const taskQueue = unique('triage-twice');
    const service = unique('ledger');
    const title = `Ledger errors ${service}`;
    const from = fake.requests.length;
    fake.script(toolUse('toolu_t1', { service }), final({ severity: 'low', title, summary: 'slow queries' }));
    const event = alert(service);
    const { first, again, result } = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const gate = app.gate(env.client, taskQueue);
        const first = await gate.admit(event);
        const result = await awaitRun(env.client, first);
        const again = await gate.admit({ ...event, deliveryId: unique('redelivery') });
        return { first, again, result };
      },
      { activities: app.activities() },
    );
    assert.equal(first.decision, 'started');
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(again.decision, 'completed');
    assert.equal(again.runKey, first.runKey);
    assert.deepEqual(again.result, result, 'the stored result, not a second run');
    assert.equal(fake.requests.length - from, 2, 'the model was called for the first delivery only');
    assert.equal(ticketsOf(title).length, 1);
  });

  test('the model proposes the ticket in its loop: staged, filed only after its final answer, by the commit stage', async () => {
    const modelApp = createWakegate(
      incidentTriageOptions({ trackerUrl, effectsBy: 'model', model: { baseURL: anthropicUrl, apiKey: 'sk-ant-test', model: 'claude-test' } }),
    );
    const taskQueue = unique('triage-proposed');
    const service = unique('search');
    const title = `Search errors ${service}`;
    const from = fake.requests.length;
    let ticketsWhenAnswering = -1;
    fake.script(
      toolUse('toolu_p1', { service }),
      // A proposal whose arguments do not parse goes back to the model like a bad tool call.
      { reply: { content: [{ type: 'tool_use', id: 'toolu_p2', name: 'file_ticket', input: { title, severity: 'urgent' } }] } },
      { reply: { content: [{ type: 'tool_use', id: 'toolu_p3', name: 'file_ticket', input: { title, severity: 'high' } }] } },
      {
        compute: () => {
          ticketsWhenAnswering = ticketsOf(title).length;
          return { reply: { content: JSON.stringify({ severity: 'high', title, summary: 'search is down' }) } };
        },
      },
    );
    const result = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => awaitRun(env.client, await modelApp.gate(env.client, taskQueue).admit(alert(service))),
      {
        activities: modelApp.activities(),
      },
    );
    assert.equal(result.terminalReason, 'success', result.summary);
    const requests = fake.requests.slice(from);
    assert.deepEqual((requests[0]!.body.tools ?? []).map((t) => t.name).sort(), ['file_ticket', 'search_errors'], 'the effect is given to the model');
    const [bad] = toolResults(requests[2]!.body).filter((r) => r.tool_use_id === 'toolu_p2');
    assert.match((JSON.parse(text(bad!.content)) as { error: string }).error, /effect "file_ticket": invalid arguments: severity/);
    assert.equal(ticketsWhenAnswering, 0, 'nothing was filed while the loop ran');
    const out = result.output as { staged: { effect: string; args: unknown }[]; committed: EffectOutcome[] };
    assert.deepEqual(out.staged, [{ effect: 'file_ticket', args: { title, severity: 'high' } }]);
    assert.deepEqual(
      out.committed.map((e) => [e.name, e.outcome]),
      [['file_ticket', 'applied']],
    );
    assert.equal(ticketsOf(title).length, 1);
  });
});

describe('seed Test 2 with real worker processes: killed after the tracker created the ticket, before the worker heard', () => {
  const worker = async (taskQueue: string) => {
    const w = spawnWorker({
      TEMPORAL_ADDRESS: env.server.address,
      WAKEGATE_TASK_QUEUE: taskQueue,
      WAKEGATE_APP: 'test/fixtures/incident-app.ts',
      INCIDENT_TRACKER_URL: trackerUrl,
      INCIDENT_ANTHROPIC_URL: anthropicUrl,
    });
    workers.push(w);
    await w.ready;
    return w;
  };
  /** Hold the answer to the first create of `title` (the ticket exists) until its client is gone. */
  const holdFirstCreate = (title: string) => {
    const created = deferred<Ticket>();
    tracker.afterCreate = async (ticket, req: FastifyRequest) => {
      if (ticket.title !== title || tracker.tickets.filter((t) => t.title === title).length > 1) return;
      created.resolve(ticket);
      await new Promise<void>((r) => (req.raw.socket.destroyed ? r() : req.raw.socket.once('close', () => r())));
    };
    return created.promise;
  };
  /** One run up to the held create, the first worker SIGKILLed there, a second worker started (after `between`). */
  const killedInTheWindow = async (name: string, between: () => void = () => undefined) => {
    const taskQueue = unique(name);
    const service = unique(name);
    const title = `${name} ${service}`;
    fake.script(toolUse('toolu_k', { service }), final({ severity: 'high', title, summary: 'errors spiking' }));
    const created = holdFirstCreate(title);
    const first = await worker(taskQueue);
    const a = await app.gate(env.client, taskQueue).admit(alert(service));
    const handle = env.client.workflow.getHandle(a.runKey);
    const ticket = await created;
    assert.equal(ticketsOf(title).length, 1, 'the ticket exists; the worker has not heard');
    assert.equal((await activityEvents(handle, 'modelTurn')).completed, 2, 'both model turns completed before the crash');
    await first.kill();
    between();
    await worker(taskQueue);
    const result = (await handle.result()) as RunResult;
    tracker.afterCreate = undefined;
    return { result, handle, ticket, title };
  };

  test('the retry finds the ticket by its reference: reconciled_landed, exactly one ticket, no second model turn', async () => {
    const { result, handle, ticket, title } = await killedInTheWindow('t2-landed');
    assert.equal(result.terminalReason, 'success', result.summary);
    const [effect] = committed(result);
    assert.equal(effect!.outcome, 'reconciled_landed');
    assert.equal(effect!.attempt, 2);
    assert.equal(effect!.ref, ticket.id);
    assert.equal(ticket.reference, effect!.effectKey);
    assert.equal(ticketsOf(title).length, 1, 'exactly one ticket');
    assert.deepEqual((await activityEvents(handle, 'modelTurn')).startedAttempts, [1, 1], 'each model turn ran once, never again');
    assert.deepEqual((await activityEvents(handle, 'commitEffect')).startedAttempts, [2]);
  });

  test('the retry that cannot tell (the tracker’s search fails): escalated, still exactly one ticket', async () => {
    try {
      const { result, ticket, title } = await killedInTheWindow('t2-cannot-tell', () => (tracker.failSearch = true));
      assert.equal(result.terminalReason, 'escalated', result.summary);
      assert.match(result.summary, /cannot tell whether file_ticket landed/);
      const out = result.output as { committed: EffectOutcome[]; ambiguous: { effectKey: string; effect: string; detail?: string } };
      assert.equal(out.committed.length, 0, 'nothing recorded as committed');
      assert.equal(out.ambiguous.effect, 'file_ticket');
      assert.equal(out.ambiguous.effectKey, ticket.reference, 'the person is handed the key the ticket carries');
      assert.match(out.ambiguous.detail ?? '', /503/);
      assert.equal(ticketsOf(title).length, 1, 'still exactly one ticket: the retry never re-posted');
    } finally {
      tracker.failSearch = false;
    }
  });
});

describe('the tracker webhook source’s own signature scheme', () => {
  const SECRET = 'a-tracker-secret-of-some-length';
  const body = Buffer.from(JSON.stringify({ incidentId: 'inc-1', service: 'checkout', alert: 'error rate above 5%', firedAt: '2026-12-04T18:00:00Z' }));
  const scheme = trackerSource.scheme as CustomScheme;
  const verifier = scheme.create(SECRET, 300);
  const nowMs = Date.parse('2026-12-04T18:00:30Z');
  const nowS = Math.floor(nowMs / 1000);
  const verify = (headers: Record<string, string | undefined>, raw = body) => verifier.verify(raw, headers, nowMs);

  test('a good signature is accepted, also next to a stale one during a rotation', async () => {
    assert.equal(typeof trackerSource.scheme, 'object');
    assert.deepEqual(await verify({ [SIGNATURE_HEADER]: signTrackerDelivery(SECRET, body, nowS) }), { ok: true });
    const old = signTrackerDelivery('the-previous-secret-value', body, nowS).split(',')[1];
    assert.deepEqual(await verify({ [SIGNATURE_HEADER]: `${signTrackerDelivery(SECRET, body, nowS)},${old}` }), { ok: true });
    assert.deepEqual(await verify({ [SIGNATURE_HEADER]: signTrackerDelivery(SECRET, body, nowS - 299) }), { ok: true }, 'inside the window');
  });

  test('bad signatures, stale or future timestamps and missing headers are refused with their codes', async () => {
    const code = async (headers: Record<string, string | undefined>, raw = body) => {
      const v = await verify(headers, raw);
      return v.ok ? 'ok' : v.code;
    };
    assert.equal(await code({ [SIGNATURE_HEADER]: signTrackerDelivery('another-secret-entirely', body, nowS) }), 'bad_signature');
    assert.equal(
      await code({ [SIGNATURE_HEADER]: signTrackerDelivery(SECRET, body, nowS) }, Buffer.from(body.toString().replace('checkout', 'checkouT'))),
      'bad_signature',
    );
    // The timestamp is signed: moving it breaks the signature.
    const sig = signTrackerDelivery(SECRET, body, nowS).split(',')[1];
    assert.equal(await code({ [SIGNATURE_HEADER]: `t=${nowS - 1},${sig}` }), 'bad_signature');
    assert.equal(await code({ [SIGNATURE_HEADER]: `t=${nowS},v1=zz` }), 'bad_signature');
    assert.equal(await code({ [SIGNATURE_HEADER]: signTrackerDelivery(SECRET, body, nowS - 301) }), 'timestamp_expired');
    assert.equal(await code({ [SIGNATURE_HEADER]: signTrackerDelivery(SECRET, body, nowS + 301) }), 'timestamp_in_future');
    assert.equal(await code({}), 'missing_signature');
    assert.equal(await code({ [SIGNATURE_HEADER]: `t=${nowS}` }), 'missing_signature');
    assert.equal(await code({ [SIGNATURE_HEADER]: `t=yesterday,${sig}` }), 'bad_timestamp');
    assert.throws(() => scheme.create('short', 300), /at least 16 characters/);
  });

  test('through the real ingress: a signed alert starts a triage that files one ticket; a bad signature is refused with 401', async () => {
    const taskQueue = unique('triage-ingress');
    const service = unique('ledger');
    const title = `Ledger errors ${service}`;
    const config = { ...loadConfig({}).ingress, host: '127.0.0.1', port: 0, operatorPort: 0, secrets: { WAKEGATE_WEBHOOK_SECRET_TRACKER: SECRET } };
    const ingress = await startIngress({ client: env.client, taskQueue, registry: app.registry, sources: app.webhookSources, config });
    try {
      const delivery = JSON.stringify({
        incidentId: unique('inc'),
        service,
        alert: 'p99 latency above 2s',
        firedAt: '2026-12-04T18:05:00Z',
      } satisfies AlertFired);
      const send = (signature: string) =>
        fetch(`${ingress.url}/webhooks/tracker`, {
          method: 'POST',
          body: delivery,
          headers: { 'content-type': 'application/json', 'x-tracker-delivery': 'dlv-1', [SIGNATURE_HEADER]: signature },
        });
      const refused = await send(signTrackerDelivery('not-the-configured-secret', delivery));
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'bad_signature');

      fake.script(toolUse('toolu_i', { service }), final({ severity: 'low', title, summary: 'latency regression' }));
      const result = await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const res = await send(signTrackerDelivery(SECRET, delivery));
          const answer = (await res.json()) as { decision: string; runKey: string };
          assert.equal(res.status, 202, JSON.stringify(answer));
          assert.equal(answer.decision, 'started');
          return (await env.client.workflow.getHandle(answer.runKey).result()) as RunResult;
        },
        { activities: app.activities() },
      );
      assert.equal(result.terminalReason, 'success', result.summary);
      assert.equal(ticketsOf(title).length, 1);
      assert.equal(ticketsOf(title)[0]!.severity, 'low');
    } finally {
      await ingress.close();
    }
  });
});
