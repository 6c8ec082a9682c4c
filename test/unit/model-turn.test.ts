import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, type LanguageModelV3 } from '@ai-sdk/provider';
import { ApplicationFailure } from '@temporalio/common';
import { countTokens } from 'gpt-tokenizer';
import { chatTokens, offlineModel } from '../../src/models/offline';
import { anthropic, openaiCompatible } from '../../src/models/providers';
import { aiSdkModel, type ModelTurn, type TurnRequest, type ModelTool } from '../../src/models/turn';
import type { ChatMessage } from '../../src/core/contracts';
import { FailureType } from '../../src/core/failures';
import { fakeAnthropic } from '../fakes/anthropic';
import { fakeOpenAI } from '../fakes/openai';

/*
 * One model turn through the AI SDK's LanguageModelV3: the OpenAI Chat Completions and Anthropic
 * Messages wire formats against local fakes (real HTTP), the mapping of provider errors to Temporal
 * failures, and the offline model's reasoning and token counts.
 */

const readRelease: ModelTool = {
  name: 'read_release',
  description: 'Reads the release of a package.',
  parameters: { type: 'object', properties: { repo: { type: 'string' }, package: { type: 'string' } }, required: ['repo', 'package'] },
};
const opening: ChatMessage[] = [
  { role: 'system', content: 'You keep dependencies current.' },
  {
    role: 'user',
    content: JSON.stringify({
      task: 'bump dependencies',
      event: { key: 'k1', type: 'release.published', entity: 'acme/web:lodash', payload: { repo: 'acme/web', package: 'lodash', to: '4.17.21' } },
      observations: [],
    }),
  },
];
const answerSchema = {
  type: 'object',
  properties: { conclusion: { type: 'string', enum: ['commit', 'no_op'] }, summary: { type: 'string' } },
  required: ['conclusion', 'summary'],
};

let openai: ReturnType<typeof fakeOpenAI>;
let claude: ReturnType<typeof fakeAnthropic>;
let gpt: ModelTurn;
let sonnet: ModelTurn;

before(async () => {
  openai = fakeOpenAI();
  claude = fakeAnthropic();
  gpt = aiSdkModel(openaiCompatible({ baseURL: await openai.start(), apiKey: 'sk-test', model: 'gpt-test' }));
  sonnet = aiSdkModel(anthropic({ baseURL: await claude.start(), apiKey: 'ak-test', model: 'claude-test' }));
});
after(async () => {
  await openai?.app.close();
  await claude?.app.close();
});

describe('OpenAI Chat Completions wire', () => {
  test('sends the tools with their JSON-Schema parameters; returns a tool call with parsed args and the provider usage', async () => {
    openai.script({
      reply: {
        toolCalls: [{ id: 'call_a', name: 'read_release', arguments: { repo: 'acme/web', package: 'lodash' } }],
        usage: { prompt_tokens: 123, completion_tokens: 45 },
        model: 'gpt-test-2026',
      },
    });
    const reply = await gpt({ messages: opening, tools: [readRelease], maxOutputTokens: 100, answerSchema });
    const sent = openai.requests.at(-1)!;
    assert.deepEqual(sent.body.tools, [
      { type: 'function', function: { name: 'read_release', description: readRelease.description, parameters: readRelease.parameters } },
    ]);
    assert.equal(sent.body.max_tokens, 100);
    assert.equal(sent.authorization, 'Bearer sk-test');
    assert.equal(sent.body.response_format, undefined, 'no response format while tools are offered');
    assert.deepEqual(sent.messages, opening);
    assert.deepEqual(reply, {
      model: 'gpt-test-2026',
      text: '',
      toolCalls: [{ id: 'call_a', name: 'read_release', args: { repo: 'acme/web', package: 'lodash' } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 123, outputTokens: 45 },
    });
  });

  test('a final text reply after a tool result: the call and its result go back on the wire; the answer schema is the response format', async () => {
    openai.script({ reply: { content: '{"conclusion":"no_op","summary":"already current"}', usage: { prompt_tokens: 200, completion_tokens: 12 } } });
    const messages: ChatMessage[] = [
      ...opening,
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_a', name: 'read_release', args: { repo: 'acme/web', package: 'lodash' } }] },
      { role: 'tool', toolCallId: 'call_a', content: '{"changed":false,"headline":"lodash is already at 4.17.21"}' },
    ];
    const reply = await gpt({ messages, tools: [], maxOutputTokens: 50, answerSchema });
    const sent = openai.requests.at(-1)!;
    assert.deepEqual(sent.messages.slice(2), messages.slice(2));
    assert.equal(sent.body.tools, undefined);
    assert.equal(sent.body.response_format?.type, 'json_schema');
    assert.deepEqual(sent.body.response_format?.json_schema?.schema, answerSchema);
    assert.equal(reply.text, '{"conclusion":"no_op","summary":"already current"}');
    assert.deepEqual(reply.toolCalls, []);
    assert.equal(reply.finishReason, 'stop');
    assert.deepEqual(reply.usage, { inputTokens: 200, outputTokens: 12 });
    assert.equal(reply.model, 'gpt-test-fake');
  });

  test('arguments that are not valid JSON: args {} and argsError, the call kept', async () => {
    openai.script({ reply: { toolCalls: [{ id: 'call_b', name: 'read_release', arguments: '{"repo": "acme/web", ' }] } });
    const reply = await gpt({ messages: opening, tools: [readRelease], maxOutputTokens: 100 });
    assert.equal(reply.toolCalls.length, 1);
    const [call] = reply.toolCalls;
    assert.deepEqual({ id: call!.id, name: call!.name, args: call!.args }, { id: 'call_b', name: 'read_release', args: {} });
    assert.match(call!.argsError ?? '', /JSON/);
  });

  test('a provider that reports no usage: the local tokenizer counts', async () => {
    openai.script({ reply: { content: 'hello world', usage: null } });
    const req: TurnRequest = { messages: opening, tools: [readRelease], maxOutputTokens: 20 };
    const reply = await gpt(req);
    assert.equal(reply.usage.inputTokens, chatTokens(req.messages, req.tools));
    assert.equal(reply.usage.outputTokens, chatTokens([{ role: 'assistant', content: 'hello world' }]));
  });

  test("unscripted, the fake answers with the offline model's reasoning over the wire", async () => {
    const reply = await gpt({ messages: opening, tools: [readRelease], maxOutputTokens: 100 });
    assert.deepEqual(
      reply.toolCalls.map((c) => [c.name, c.args]),
      [['read_release', { repo: 'acme/web', package: 'lodash' }]],
    );
  });
});

describe('Anthropic Messages wire', () => {
  test('tool_use block → tool call with args; tools sent as input_schema; usage from the provider', async () => {
    claude.script({
      reply: {
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_release', input: { repo: 'acme/web', package: 'lodash' } },
        ],
        usage: { input_tokens: 321, output_tokens: 17 },
        model: 'claude-test-20260101',
      },
    });
    const reply = await sonnet({ messages: opening, tools: [readRelease], maxOutputTokens: 300 });
    const sent = claude.requests.at(-1)!;
    assert.equal(sent.apiKey, 'ak-test');
    assert.equal(sent.body.max_tokens, 300);
    assert.deepEqual(
      sent.body.tools?.map((t) => [t.name, t.description, t.input_schema]),
      [['read_release', readRelease.description, readRelease.parameters]],
    );
    assert.deepEqual(sent.body.system, [{ type: 'text', text: opening[0]!.content }]);
    assert.deepEqual(reply, {
      model: 'claude-test-20260101',
      text: 'Let me check.',
      toolCalls: [{ id: 'toolu_1', name: 'read_release', args: { repo: 'acme/web', package: 'lodash' } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 321, outputTokens: 17 },
    });
  });

  test('a text reply after tool results: tool_use and tool_result blocks on the wire, text and usage back', async () => {
    claude.script({ reply: { content: '{"conclusion":"commit","summary":"bump lodash"}', usage: { input_tokens: 400, output_tokens: 9 } } });
    const messages: ChatMessage[] = [
      ...opening,
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'toolu_1', name: 'read_release', args: { repo: 'acme/web', package: 'lodash' } },
          { id: 'toolu_2', name: 'read_release', args: { repo: 'acme/api', package: 'lodash' } },
        ],
      },
      { role: 'tool', toolCallId: 'toolu_1', content: '{"changed":true,"headline":"bump lodash"}' },
      { role: 'tool', toolCallId: 'toolu_2', content: '{"changed":false}' },
    ];
    const reply = await sonnet({ messages, tools: [readRelease], maxOutputTokens: 300 });
    const wire = claude.requests.at(-1)!.body.messages;
    assert.equal(wire.length, 3, 'user, assistant, and one user turn holding both results');
    const assistant = wire[1]!.content as { type: string; id?: string; input?: unknown }[];
    assert.deepEqual(
      assistant.map((b) => [b.type, b.id, b.input]),
      [
        ['tool_use', 'toolu_1', { repo: 'acme/web', package: 'lodash' }],
        ['tool_use', 'toolu_2', { repo: 'acme/api', package: 'lodash' }],
      ],
    );
    const results = wire[2]!.content as { type: string; tool_use_id?: string }[];
    assert.deepEqual(
      results.map((b) => [b.type, b.tool_use_id]),
      [
        ['tool_result', 'toolu_1'],
        ['tool_result', 'toolu_2'],
      ],
    );
    assert.equal(reply.text, '{"conclusion":"commit","summary":"bump lodash"}');
    assert.equal(reply.finishReason, 'stop');
    assert.deepEqual(reply.usage, { inputTokens: 400, outputTokens: 9 });
  });
});

/** The failure a step rejected with. */
async function failureOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof Error, `rejected with a non-Error: ${String(err)}`);
    return err;
  }
  assert.fail('the step did not fail');
}

describe('provider errors', () => {
  const req: TurnRequest = { messages: opening, tools: [readRelease], maxOutputTokens: 100 };

  test('400: ProviderRejected, non-retryable, after exactly one request (no SDK retry)', async () => {
    const before = openai.requests.length;
    openai.script({ error: { status: 400, message: "Invalid schema for function 'read_release'" } });
    const err = await failureOf(gpt(req));
    assert.ok(err instanceof ApplicationFailure, err.message);
    assert.equal(err.type, FailureType.ProviderRejected);
    assert.equal(err.nonRetryable, true);
    assert.equal(err.message, "model provider rejected the request (HTTP 400): Invalid schema for function 'read_release'");
    assert.equal(openai.requests.length - before, 1);
  });

  test('401 from Anthropic: ProviderRejected too, with the error body message', async () => {
    claude.script({ error: { status: 401, message: 'invalid x-api-key' } });
    const err = await failureOf(sonnet(req));
    assert.ok(err instanceof ApplicationFailure);
    assert.equal(err.type, FailureType.ProviderRejected);
    assert.match(err.message, /HTTP 401\): invalid x-api-key/);
  });

  test('429 with Retry-After: 7 → RateLimited, retryable, next retry in 7000 ms', async () => {
    const before = openai.requests.length;
    openai.script({ error: { status: 429, message: 'slow down', retryAfter: '7' } });
    const err = await failureOf(gpt(req));
    assert.ok(err instanceof ApplicationFailure, err.message);
    assert.equal(err.type, FailureType.RateLimited);
    assert.equal(err.nonRetryable, false);
    assert.equal(err.nextRetryDelay, 7000);
    assert.equal(openai.requests.length - before, 1);
  });

  test('429 with an HTTP-date Retry-After, and without one (1000 ms)', async () => {
    claude.script({ error: { status: 429, retryAfter: new Date(Date.now() + 30_000).toUTCString() } }, { error: { status: 429 } });
    const dated = await failureOf(sonnet(req));
    assert.ok(dated instanceof ApplicationFailure && typeof dated.nextRetryDelay === 'number');
    // The date has whole seconds: between 29 and 30 s from now.
    assert.ok(dated.nextRetryDelay > 28_000 && dated.nextRetryDelay <= 30_000, String(dated.nextRetryDelay));
    const bare = await failureOf(sonnet(req));
    assert.ok(bare instanceof ApplicationFailure);
    assert.equal(bare.nextRetryDelay, 1000);
  });

  for (const status of [503, 408]) {
    test(`${status}: retryable, naming the status, not ProviderRejected; one request`, async () => {
      const before = openai.requests.length;
      openai.script({ error: { status, message: 'try again' } });
      const err = await failureOf(gpt(req));
      assert.ok(!(err instanceof ApplicationFailure && err.nonRetryable), 'retryable');
      assert.notEqual((err as ApplicationFailure).type, FailureType.ProviderRejected);
      assert.match(err.message, new RegExp(`HTTP ${status}`));
      assert.equal(openai.requests.length - before, 1);
    });
  }

  test('a provider that cannot be reached: retryable', async () => {
    // A port nothing listens on (a closed server's).
    const gone = fakeOpenAI();
    const url = await gone.start();
    await gone.app.close();
    const err = await failureOf(aiSdkModel(openaiCompatible({ baseURL: url, apiKey: 'k', model: 'm' }))(req));
    assert.ok(!(err instanceof ApplicationFailure), err.message);
    assert.match(err.message, /unreachable/);
  });

  test('an abort of the signal propagates as the abort, not as a provider failure', async () => {
    openai.script({ stall: { ms: 1000 } });
    const ac = new AbortController();
    // Temporal aborts an activity's signal with its CancelledFailure as the reason.
    const reason = Object.assign(new Error('activity cancelled'), { name: 'CancelledFailure' });
    setTimeout(() => ac.abort(reason), 100);
    assert.equal(await failureOf(gpt(req, ac.signal)), reason);
  });

  test('an abort the SDK wrapped in an APICallError (mid-body) is still the abort', async () => {
    const ac = new AbortController();
    const wrapping: LanguageModelV3 = {
      ...offlineModel(),
      doGenerate: async () => {
        ac.abort();
        throw new APICallError({
          message: 'Failed to process successful response',
          statusCode: 200,
          url: 'http://x',
          requestBodyValues: {},
          cause: ac.signal.reason,
        });
      },
    };
    const err = await failureOf(aiSdkModel(wrapping)(req, ac.signal));
    assert.equal(err, ac.signal.reason);
    assert.equal(err.name, 'AbortError');
  });
});

describe('offline model', () => {
  const step = aiSdkModel(offlineModel());
  const checkRelease: ModelTool = {
    name: 'check_release',
    description: 'Checks a release.',
    parameters: {
      type: 'object',
      properties: {
        repo: { type: 'string' },
        to: { type: 'string' },
        channel: { type: 'string', default: 'stable' },
        limit: { type: 'number', examples: [5, 10] },
        mode: { type: 'string', enum: ['fast', 'slow'] },
        owner: { type: 'string' },
      },
      required: ['repo', 'owner'],
    },
  };
  const openPr: ModelTool = {
    name: 'open_pr',
    description: '[effect] Opens a pull request.',
    parameters: { type: 'object', properties: { repo: { type: 'string' } } },
  };
  const tools = [checkRelease, readRelease, openPr];
  const afterReads = (...results: string[]): ChatMessage[] => [
    ...opening,
    { role: 'assistant', content: '', toolCalls: results.map((_, i) => ({ id: `c${i}`, name: i ? 'read_release' : 'check_release', args: {} })) },
    ...results.map((content, i) => ({ role: 'tool' as const, toolCallId: `c${i}`, content })),
  ];

  test('calls every pending read tool at once, with args from event.payload, defaults, examples and enums; never an [effect] tool', async () => {
    const reply = await step({ messages: opening, tools, maxOutputTokens: 200 });
    assert.equal(reply.finishReason, 'tool-calls');
    assert.equal(reply.model, 'offline');
    assert.deepEqual(
      reply.toolCalls.map((c) => [c.name, c.args]),
      [
        // owner is required but nowhere to be found: left out for the caller to report.
        ['check_release', { repo: 'acme/web', to: '4.17.21', channel: 'stable', limit: 5, mode: 'fast' }],
        ['read_release', { repo: 'acme/web', package: 'lodash' }],
      ],
    );
  });

  test('answers no_op when nothing changed, commit with the headlines otherwise (the [effect] tool still uncalled)', async () => {
    const quiet = await step({ messages: afterReads('{"changed":false,"headline":"up to date"}', '{"changed":false}'), tools, maxOutputTokens: 200 });
    assert.deepEqual(quiet.toolCalls, []);
    assert.equal(quiet.finishReason, 'stop');
    assert.deepEqual(JSON.parse(quiet.text), { conclusion: 'no_op', summary: 'nothing changed' });
    const busy = await step({
      messages: afterReads('{"changed":true,"headline":"bump lodash"}', '{"changed":true,"headline":"bump react"}'),
      tools,
      maxOutputTokens: 200,
    });
    assert.deepEqual(busy.toolCalls, []);
    assert.deepEqual(JSON.parse(busy.text), { conclusion: 'commit', summary: 'bump lodash; bump react' });
  });

  test('observations in the opening message count; JSON that is no observation does not', async () => {
    const messages: ChatMessage[] = [{ role: 'user', content: JSON.stringify({ task: 't', observations: [{ changed: true, headline: 'new release' }] }) }];
    assert.deepEqual(JSON.parse((await step({ messages, tools: [], maxOutputTokens: 50 })).text), { conclusion: 'commit', summary: 'new release' });
    const noise: ChatMessage[] = [{ role: 'user', content: JSON.stringify({ task: 't', items: [1, 2] }) }];
    assert.deepEqual(JSON.parse((await step({ messages: noise, tools: [], maxOutputTokens: 50 })).text), { conclusion: 'no_op', summary: 'nothing changed' });
  });

  test('fills a custom answer schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        conclusion: { type: 'string', enum: ['escalate', 'commit', 'no_op'] },
        summary: { type: 'string' },
        title: { type: 'string' },
        confidence: { type: 'number' },
        count: { type: 'integer' },
        urgent: { type: 'boolean' },
        labels: { type: 'array', items: { type: 'string' } },
        level: { type: 'string', enum: ['low', 'high'] },
        details: { type: 'object', properties: { note: { type: 'string' }, ok: { type: 'boolean' } } },
      },
    };
    const reply = await step({
      messages: afterReads('{"changed":true,"headline":"bump lodash"}', '{"changed":false}'),
      tools: [],
      maxOutputTokens: 200,
      answerSchema: schema,
    });
    assert.deepEqual(JSON.parse(reply.text), {
      conclusion: 'commit',
      summary: 'bump lodash',
      title: 'bump lodash',
      confidence: 0,
      count: 0,
      urgent: true,
      labels: [],
      level: 'low',
      details: { note: 'bump lodash', ok: true },
    });
    // A conclusion enum without commit/no_op: its first value.
    const other = await step({
      messages: opening,
      tools: [],
      maxOutputTokens: 200,
      answerSchema: { type: 'object', properties: { conclusion: { enum: ['open', 'skip'] } } },
    });
    assert.deepEqual(JSON.parse(other.text), { conclusion: 'open' });
  });

  test('usage: counted with the o200k tokenizer, deterministic, output capped at maxOutputTokens', async () => {
    const req: TurnRequest = { messages: opening, tools, maxOutputTokens: 200 };
    const a = await step(req);
    assert.deepEqual(await step(req), a, 'deterministic');
    assert.equal(a.usage.inputTokens, chatTokens(req.messages, req.tools));
    assert.equal(a.usage.outputTokens, countTokens(JSON.stringify(a.toolCalls)));
    assert.ok(a.usage.inputTokens > 0 && a.usage.outputTokens > 0);
    const capped = await step({ ...req, maxOutputTokens: 3 });
    assert.equal(capped.usage.outputTokens, 3);
  });
});
