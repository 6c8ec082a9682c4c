import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { chatTokens } from '../../src/models/offline';
import type { TurnReply } from '../../src/models/turn';
import { readReply } from '../../activities/run/run';
import type { ModelRequest } from '../../src/core/contracts';
import { loadConfig } from '../../src/config/config';
import { httpChannel, slackChannel } from '../../src/providers/channel';
import { githubPulls } from '../../src/providers/pulls';
import { checkEffects } from '../../activities/commit/commit';
import { defineAgent, defineEffect, defineTool } from '../../src/agents/definition';
import { exampleAgents } from '../helpers/app';

/* The real adapters against local fakes of their APIs (real HTTP, no network). */

const apps: FastifyInstance[] = [];
const serve = async (app: FastifyInstance) => {
  apps.push(app);
  return app.listen({ host: '127.0.0.1', port: 0 });
};
after(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

describe('what the run reads from a model turn', () => {
  const tracker = defineTool({
    name: 'search_errors',
    description: 'recent errors of a service',
    input: z.object({ service: z.string().min(1) }),
    run: async () => ({ content: '{}', changed: true }),
  });
  const ticket = defineEffect({
    name: 'file_ticket',
    description: 'file one ticket',
    class: 'idempotent',
    reversible: true,
    input: z.object({ title: z.string().min(3) }),
    apply: async () => ({ ref: 't1' }),
  });
  const agent = defineAgent({
    name: 'triage',
    description: 'triage one incident',
    triggers: ['ping'],
    wakeKey: (e) => e.entity,
    wakeKeyRationale: 'one wake per pinged entity, for this test',
    systemPrompt: 'triage',
    model: { maxOutputTokens: 100, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
    budget: { turns: 3, tokens: 10_000, toolCalls: 3, wallClock: '1m', costUsd: 1 },
    tools: [tracker],
    effects: [ticket],
    approval: { irreversible: 'required', timeout: '30s' },
  });
  const req: ModelRequest = {
    agent: 'triage',
    messages: [{ role: 'user', content: 'go' }],
    tools: [...agent.policy.tools, ...agent.policy.effects].map(({ name, description, parameters }) => ({ name, description, parameters })),
    maxOutputTokens: 100,
    answer: 'agent',
    run: { runKey: 'r', wakeKey: 'w', entity: 'e', eventKey: 'k', payload: {} },
  };
  const step = (over: Partial<TurnReply>): TurnReply => ({
    model: 'm',
    text: '',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 1, outputTokens: 1 },
    ...over,
  });

  test('tool calls are checked before anything runs: valid arguments pass, invalid ones and unknown names become errors for the model, effects are proposals', () => {
    const reply = readReply(
      agent,
      req,
      step({
        finishReason: 'tool-calls',
        toolCalls: [
          { id: '1', name: 'search_errors', args: { service: 'api' } },
          { id: '2', name: 'search_errors', args: {} },
          { id: '3', name: 'delete_everything', args: {} },
          { id: '4', name: 'file_ticket', args: { title: 'API 500s' } },
          { id: '5', name: 'file_ticket', args: { title: 'x' } },
          { id: '6', name: 'search_errors', args: {}, argsError: 'Unexpected end of JSON input' },
        ],
      }),
    );
    const [ok, bad, unknown, proposal, badProposal, notJson] = reply.toolCalls;
    assert.deepEqual([ok!.error, ok!.proposes, ok!.args], [undefined, undefined, { service: 'api' }]);
    assert.match(bad!.error!, /invalid arguments: service/);
    assert.match(unknown!.error!, /no tool named "delete_everything"/);
    assert.deepEqual([proposal!.proposes, proposal!.error], [true, undefined]);
    assert.match(badProposal!.error!, /effect "file_ticket": invalid arguments: title/);
    assert.match(notJson!.error!, /not valid JSON/);
  });

  test("a final answer is read against the agent's schema and fails closed, with the raw text kept", () => {
    const cases: [string, RegExp][] = [
      ['I think we should commit this change.', /not one JSON object/],
      ['{"conclusion":"commit","summ', /not one JSON object/],
      ['{"conclusion":"maybe","summary":"unsure"}', /conclusion/],
      ['{"conclusion":"commit"}', /summary/],
      ['', /empty/],
    ];
    for (const [text, problem] of cases) {
      const reply = readReply(agent, req, step({ text }));
      assert.equal(reply.final, undefined, text);
      assert.equal(reply.unparsedFinal?.raw, text);
      assert.match(reply.unparsedFinal!.problem, problem, text);
    }
    // The one shape that is accepted, also inside a single Markdown code fence; no_op by the default plan.
    const quiet = readReply(agent, req, step({ text: '```json\n{"conclusion":"no_op","summary":"quiet"}\n```' }));
    assert.deepEqual(quiet.final, { answer: { conclusion: 'no_op', summary: 'quiet' }, summary: 'quiet', noOp: 'quiet', effects: [] });
  });

  test("effects the agent's code picks from its answer are checked like the model's: a bad one goes back to the model", () => {
    const coded = {
      ...agent,
      decide: (a: unknown) => ({ summary: 's', effects: [{ effect: 'file_ticket', args: { title: (a as { summary: string }).summary } }] }),
    };
    const good = readReply(coded, req, step({ text: '{"conclusion":"commit","summary":"API 500s since 14:00"}' }));
    assert.deepEqual(good.final?.effects, [{ effect: 'file_ticket', args: { title: 'API 500s since 14:00' } }]);
    const bad = readReply(coded, req, step({ text: '{"conclusion":"commit","summary":"x"}' }));
    assert.equal(bad.final, undefined);
    assert.match(bad.unparsedFinal!.problem, /cannot be carried out: effect "file_ticket": invalid arguments: title/);
  });

  test('offline model: token counts from the o200k tokenizer', () => {
    // "hello world" is two tokens in o200k_base: the counts come from a real tokenizer, not a length heuristic.
    assert.equal(chatTokens([{ role: 'user', content: 'hello world' }]) - chatTokens([{ role: 'user', content: '' }]), 2);
  });
});

describe('effect adapters', () => {
  test('Slack incoming webhook: posts { text }; declared unkeyed, so a provider_key effect is refused on it at start', async () => {
    const app = Fastify();
    const got: unknown[] = [];
    app.post('/services/T/B/X', async (req, reply) => {
      got.push(req.body);
      return reply.type('text/plain').send('ok');
    });
    const url = await serve(app);
    const slack = slackChannel(`${url}/services/T/B/X`, 5000);
    await slack.post('k', 'hello');
    assert.deepEqual(got, [{ text: 'hello' }]);
    const onSlack = loadConfig({ WAKEGATE_CHANNEL_ADAPTER: 'slack', WAKEGATE_CHANNEL_URL: `${url}/services/T/B/X` }).outside;
    assert.throws(() => checkEffects(exampleAgents, onSlack), /"post_summary" is provider_key, but its configured provider takes no idempotency key/);
    assert.doesNotThrow(() => checkEffects(exampleAgents, loadConfig({}).outside));
  });

  test('generic HTTP sends the effect key as Idempotency-Key; a replay is reported as such', async () => {
    const app = Fastify();
    const seen = new Map<string, { id: string }>();
    app.post('/hook', async (req, reply) => {
      const key = String(req.headers['idempotency-key']);
      const hit = seen.get(key);
      if (hit) return reply.code(200).header('idempotent-replayed', 'true').send(hit);
      const made = { id: `m${seen.size + 1}` };
      seen.set(key, made);
      return reply.code(201).send(made);
    });
    const url = await serve(app);
    const ch = httpChannel(`${url}/hook`, 5000);
    const a = await ch.post('ev#post@0', 'hi');
    const b = await ch.post('ev#post@0', 'hi');
    assert.deepEqual(
      [a, b],
      [
        { ref: 'm1', replayed: false },
        { ref: 'm1', replayed: true },
      ],
    );
    assert.equal(seen.size, 1);
  });

  test('GitHub pull requests: found by head branch, created once, and a 422 race resolves to the open PR', async () => {
    const app = Fastify();
    const prs: { number: number; head: string }[] = [];
    let creates = 0;
    let raceNext = false;
    app.get<{ Querystring: { head: string; state: string } }>('/repos/acme/web/pulls', async (req) => prs.filter((p) => `acme:${p.head}` === req.query.head));
    app.post<{ Body: { head: string; base: string; title: string } }>('/repos/acme/web/pulls', async (req, reply) => {
      assert.equal(req.headers.authorization, 'Bearer ghp_test');
      if (raceNext) {
        // Another run created it between our look-up and our create.
        raceNext = false;
        prs.push({ number: 99, head: req.body.head });
        return reply.code(422).send({ message: 'A pull request already exists for acme:' + req.body.head });
      }
      creates += 1;
      const pr = { number: prs.length + 1, head: req.body.head };
      prs.push(pr);
      return reply.code(201).send(pr);
    });
    const url = await serve(app);
    const gh = githubPulls(url, 'ghp_test', 'main', 5000);
    const pr = { repo: 'acme/web', branch: 'bump/zod-4.2.0', title: 't', body: 'b' };
    assert.deepEqual(await gh.open(pr), { ref: '#1', existed: false });
    assert.deepEqual(await gh.open(pr), { ref: '#1', existed: true });
    assert.equal(creates, 1);
    raceNext = true;
    assert.deepEqual(await gh.open({ ...pr, branch: 'bump/vite-8.0.0' }), { ref: '#99', existed: true });
  });

  test('agent definitions are validated with every bad field named', () => {
    assert.throws(
      () =>
        defineAgent({
          ...({} as Parameters<typeof defineAgent>[0]),
          name: 'Bad Name',
          description: 'x',
          triggers: ['x'],
          systemPrompt: 'x',
          model: { maxOutputTokens: 10, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
          budget: { turns: 1, tokens: 10, toolCalls: 1, wallClock: '1m', costUsd: 1 },
          tools: [],
          wakeKey: (e) => e.entity,
          wakeKeyRationale: 'one wake per entity, for this test',
          effects: [{ name: 'post' } as never],
          approval: { irreversible: 'required', timeout: '5m' },
        }),
      (err: Error) => /name:/.test(err.message) && /effects\.0: effects\[\] must be made with defineEffect/.test(err.message),
    );
    assert.throws(
      () =>
        defineAgent({
          name: 'slow',
          description: 'x',
          triggers: ['x'],
          wakeKey: (e) => e.entity,
          wakeKeyRationale: 'one wake per entity, for this test',
          systemPrompt: 'x',
          model: { maxOutputTokens: 10, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
          budget: { turns: 1, tokens: 10, toolCalls: 1, wallClock: '1m', costUsd: 1 },
          effects: [defineEffect({ name: 'send', description: 'x', class: 'provider_key', reversible: false, apply: async () => ({ ref: 'x' }) })],
          approval: { irreversible: 'required', timeout: '5m' },
        }),
      /approval\.timeout: the approval timeout must be shorter than the wall-clock budget/,
    );
    // Each class's rule needs what it runs on: a reconcile effect without find is refused where it is defined.
    assert.throws(
      () => defineEffect({ name: 'file_ticket', description: 'x', class: 'reconcile', reversible: true, apply: async () => ({ ref: 'x' }) }),
      /find: a reconcile effect needs find/,
    );
    assert.throws(
      () => defineTool({ name: 'read', description: 'x', input: z.string() as never, run: async () => ({ content: '', changed: false }) }),
      /must be a z.object/,
    );
  });
});
