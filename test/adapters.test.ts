import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { OpenAIModel } from '../activities/model/openai';
import { OfflineModel, chatTokens } from '../activities/model/offline';
import { httpChannel, slackChannel } from '../activities/effects/channel';
import { githubPulls } from '../activities/effects/pulls';
import { checkAdapters } from '../activities/effects/commit';
import { localExports } from '../activities/effects/exports';
import { defineAgent } from '../agents/definition';
import { fakeOpenAI } from './fakes/openai';
import { exampleAgents } from './helpers/app';

/* The real adapters against local fakes of their APIs (real HTTP, no network). */

const apps: FastifyInstance[] = [];
const serve = async (app: FastifyInstance) => {
  apps.push(app);
  return app.listen({ host: '127.0.0.1', port: 0 });
};
after(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

describe('model adapters', () => {
  let openai: ReturnType<typeof fakeOpenAI>;
  let url: string;
  before(async () => {
    openai = fakeOpenAI();
    url = await serve(openai.app);
  });

  test('OpenAI-compatible: the official client with base URL, key and model; tool calls, then a final answer; provider usage', async () => {
    const model = new OpenAIModel({ baseUrl: `${url}/v1`, apiKey: 'sk-test', model: 'gpt-test' });
    const tools = [{ name: 'read_dashboard', description: 'read one' }];
    const first = await model.complete({ messages: [{ role: 'user', content: 'report' }], tools, maxOutputTokens: 100 });
    assert.deepEqual(first.toolCalls.map((c) => c.name), ['read_dashboard']);
    assert.equal(first.final, undefined);
    const second = await model.complete({
      messages: [
        { role: 'user', content: 'report' },
        { role: 'assistant', content: '', toolCalls: first.toolCalls },
        { role: 'tool', toolCallId: first.toolCalls[0]!.id, content: JSON.stringify({ changed: true, headline: 'reach up 5%' }) },
      ],
      tools,
      maxOutputTokens: 100,
    });
    assert.deepEqual(second.final, { decision: 'commit', summary: 'reach up 5%' });
    assert.equal(second.model, 'gpt-test-fake');
    assert.equal(second.usage.outputTokens, 7);
    assert.equal(openai.requests.length, 2);
    assert.equal(openai.requests[0]!.authorization, 'Bearer sk-test');
    assert.equal(openai.requests[0]!.max_tokens, 100);
  });

  test('OpenAI-compatible: a final answer that is not the expected JSON fails closed (no decision), with the raw text kept', async () => {
    const model = new OpenAIModel({ baseUrl: `${url}/v1`, apiKey: 'sk-test', model: 'gpt-test' });
    const ask = () => model.complete({ messages: [{ role: 'user', content: 'report' }], tools: [], maxOutputTokens: 100 });
    const cases: [string, RegExp][] = [
      ['I think we should commit this change.', /not one JSON object/],
      ['{"decision":"commit","summ', /not one JSON object/],
      ['{"decision":"maybe","summary":"unsure"}', /decision/],
      ['{"decision":"commit"}', /summary/],
      ['', /empty/],
    ];
    for (const [content, problem] of cases) {
      openai.script({ content });
      const reply = await ask();
      assert.equal(reply.final, undefined, content);
      assert.equal(reply.unparsedFinal?.raw, content);
      assert.match(reply.unparsedFinal!.problem, problem, content);
    }
    // The one shape that is accepted, also inside a single Markdown code fence.
    openai.script({ content: '```json\n{"decision":"no_op","summary":"quiet"}\n```' });
    assert.deepEqual((await ask()).final, { decision: 'no_op', summary: 'quiet' });
  });

  test('offline model: deterministic, with token counts from the o200k tokenizer', async () => {
    const m = new OfflineModel();
    const req = { messages: [{ role: 'user' as const, content: JSON.stringify({ observations: [{ changed: false }] }) }], tools: [], maxOutputTokens: 50 };
    const a = await m.complete(req);
    assert.deepEqual(a, await m.complete(req));
    assert.equal(a.final?.decision, 'no_op');
    assert.equal(a.usage.inputTokens, chatTokens(req.messages));
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
    assert.throws(() => checkAdapters(exampleAgents, { channel: slack, exports: localExports(url, 1000), pulls: githubPulls(url, '', 'main', 1000) }), /takes no idempotency key/);
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
    assert.deepEqual([a, b], [{ ref: 'm1', replayed: false }, { ref: 'm1', replayed: true }]);
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
          effects: [{ name: 'post', kind: 'channel_post', class: 'idempotent', reversible: true, description: 'x', request: () => ({ kind: 'channel_post', text: 'x' }) }],
          approval: { irreversible: 'required', timeout: '5m' },
        }),
      (err: Error) => /name:/.test(err.message) && /effects\.0\.class/.test(err.message) && /approval\.timeout/.test(err.message),
    );
  });
});
