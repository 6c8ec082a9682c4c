import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { openaiCompatible } from '../../src/models/providers';
import { aiSdkModel, type ModelTurn } from '../../src/models/turn';
import type { UnparsedFinal } from '../../src/core/contracts';
import { startStandins, type Standins } from '../../tools/standins';
import { inputTokenBound, MODEL_TURN_RETRY } from '../../workflows/run/model-turn';
import type { RunResult } from '../../src/core/run-types';
import { fakeOpenAI, type FakeRequest } from '../fakes/openai';
import { assertClockFree, startTimeSkippingEnv, unique, withTimeSkippingWorker, workflowBundle } from '../helpers/env';
import { withBudget } from '../helpers/agents';
import type { BudgetLimits } from '../../src/core/policy';
import { standinOutside, startWake, wakeInput } from '../helpers/outside';
import { activitiesOf } from '../helpers/app';

/*
 * The run against an OpenAI-compatible fake provider (real HTTP through the official client) on the
 * time-skipping server: a garbled final answer fails closed, and every attempt of a model turn is
 * charged, including attempts the provider billed and then never answered.
 */

let env: TestWorkflowEnvironment;
let standins: Standins;
let worker: Worker;
let running: Promise<void>;
let openai: ReturnType<typeof fakeOpenAI>;
let model: ModelTurn;
const taskQueue = unique('model-answers');
// The client gives up on a stalled provider after this long (real time); the fake stalls longer.
const CLIENT_TIMEOUT_MS = 300;
const STALL = { stall: { ms: 1500 } };

before(async () => {
  env = await startTimeSkippingEnv();
  standins = await startStandins({});
  openai = fakeOpenAI();
  const url = await openai.app.listen({ host: '127.0.0.1', port: 0 });
  model = aiSdkModel(openaiCompatible({ baseURL: `${url}/v1`, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: CLIENT_TIMEOUT_MS }));
  const activities = activitiesOf({ outside: standinOutside(standins), model });
  worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities });
  running = worker.run();
});
// Each test leaves nothing behind that would hold the server's clock for the next one.
afterEach(() => assertClockFree(env));
after(async () => {
  worker?.shutdown();
  await running;
  await openai?.app.close();
  await standins?.close();
  await env?.teardown();
});

/** A dependency bump (precheck, then one model turn that decides, then one PR), and the provider requests it made. */
async function bump(tighter?: Partial<BudgetLimits>) {
  const repo = unique('acme/m');
  const input = wakeInput('deps', `${repo}:lodash`, 'release.published', { repo, package: 'lodash', from: '4.17.20', to: '4.17.21' });
  const first = openai.requests.length;
  // A tighter budget is the agent's own, in the definition a worker of its own (own task queue) loads.
  const queue = tighter ? unique('model-answers-tight') : taskQueue;
  const wake = async () => (await startWake(env.client, queue, input)).result();
  const result = tighter
    ? await withTimeSkippingWorker(env, queue, wake, {
        activities: activitiesOf({ agents: withBudget(input.agent, tighter), outside: standinOutside(standins), model }),
      })
    : await wake();
  return { result, requests: openai.requests.slice(first), prs: standins.pulls.pulls.filter((p) => p.repo === repo) };
}
/** The reservation the workflow took for a request: its input bound plus the reply cap it sent. */
const worstCase = (r: FakeRequest) =>
  inputTokenBound(
    r.messages,
    r.tools.map((t) => ({ ...t, parameters: t.parameters ?? {} })),
  ) + r.max_tokens!;
const output = <T>(r: RunResult) => r.output as T;

describe('the final answer fails closed', () => {
  const garbled: [string, string][] = [
    ['prose', 'Looks good to me, I would go ahead and open the pull request.'],
    ['truncated JSON', '{"conclusion":"commit","summary":"Bump lodash from 4.17.20 to'],
    ['an unknown conclusion', '{"conclusion":"merge_now","summary":"Bump lodash"}'],
  ];
  for (const [what, content] of garbled) {
    test(`${what}, twice: one charged corrective turn, then escalated with the raw replies kept; nothing committed`, async () => {
      openai.script({ content }, { content });
      const { result, requests, prs } = await bump();
      assert.equal(result.terminalReason, 'escalated', result.summary);
      const replies = output<{ unparsedReplies: UnparsedFinal[] }>(result).unparsedReplies;
      assert.deepEqual(
        replies.map((r) => r.raw),
        [content, content],
      );
      assert.equal(prs.length, 0, 'no effect was committed');
      assert.equal(requests.length, 2, 'one corrective turn, no more');
      // The corrective turn shows the model its reply and says what was wrong.
      const corrective = requests[1]!.messages;
      assert.equal(corrective.at(-2)?.content, content);
      assert.match(corrective.at(-1)!.content, /could not be used: .*exactly one JSON object/);
      // Both turns are charged like any turn.
      assert.equal(result.usage!.turns, 2);
      assert.equal(
        result.usage!.tokens,
        requests.reduce((n, r) => n + r.billedTokens, 0),
      );
    });
  }

  test('a garbled answer followed by a valid one: the corrective turn recovers and the run commits', async () => {
    openai.script({ content: '{"conclusion":"commit","summary":"Bump' });
    const { result, requests, prs } = await bump();
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(requests.length, 2);
    assert.equal(prs.length, 1);
    assert.equal(result.usage!.turns, 2);
  });
});

describe('every attempt of a model turn is charged', () => {
  test('a provider that bills and then times out twice: the budget shows all three attempts', async () => {
    openai.script(STALL, STALL);
    const { result, requests, prs } = await bump();
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(prs.length, 1);
    assert.equal(requests.length, MODEL_TURN_RETRY.maximumAttempts);
    assert.equal(result.attempts, 3);
    assert.equal(result.usage!.turns, 3, 'each attempt is a model turn');
    // The provider billed every attempt; the budget holds at least that.
    const billed = requests.reduce((n, r) => n + r.billedTokens, 0);
    assert.ok(result.usage!.tokens >= billed, `budget shows ${result.usage!.tokens} tokens, the provider billed ${billed}`);
    // Exactly: the two timed-out attempts keep their worst case, the answered one is settled to its usage.
    assert.equal(result.usage!.tokens, worstCase(requests[0]!) + worstCase(requests[1]!) + requests[2]!.billedTokens);
  });

  test('a budget that fits only one attempt: after a billed timeout the run ends budget_exhausted instead of trying again', async () => {
    // Calibrate: one clean run tells what one attempt of this turn reserves.
    const clean = await bump();
    assert.equal(clean.result.terminalReason, 'success');
    const oneAttempt = worstCase(clean.requests[0]!);

    openai.script(STALL, STALL, STALL);
    // Room for one worst-case attempt plus less than the smallest reply cap a second one would need.
    const { result, requests, prs } = await bump({ tokens: oneAttempt + 10 });
    assert.equal(result.terminalReason, 'budget_exhausted', result.summary);
    assert.deepEqual(output<{ dimension: string; failedModelAttempts: number }>(result), { dimension: 'tokens', failedModelAttempts: 1 });
    assert.match(result.summary, /retrying a failed model turn/);
    assert.equal(requests.length, 1, 'no second attempt was made');
    assert.equal(result.usage!.turns, 1);
    assert.equal(result.usage!.tokens, worstCase(requests[0]!));
    assert.ok(result.usage!.tokens <= oneAttempt + 10);
    assert.equal(prs.length, 0);
    openai.script();
  });
});

describe('provider errors through the AI SDK', () => {
  /** A bump whose run is started directly, for its handle and history. */
  async function bumpHandle() {
    const repo = unique('acme/e');
    const input = wakeInput('deps', `${repo}:lodash`, 'release.published', { repo, package: 'lodash', from: '4.17.20', to: '4.17.21' });
    const first = openai.requests.length;
    const handle = await startWake(env.client, taskQueue, input);
    return { handle, requests: () => openai.requests.slice(first), prs: () => standins.pulls.pulls.filter((p) => p.repo === repo) };
  }

  test('a 4xx the provider refuses the request with is final: one attempt, charged once, the run fails as ProviderRejected', async () => {
    openai.script({ error: { status: 400, message: 'model "gpt-test" does not accept tools' } });
    const { handle, requests, prs } = await bumpHandle();
    await assert.rejects(handle.result(), (err: Error) => {
      const chain: Error[] = [];
      for (let e: unknown = err; e instanceof Error; e = e.cause) chain.push(e);
      const rejected = chain.find((e) => (e as { type?: string }).type === 'ProviderRejected');
      assert.ok(rejected, chain.map((e) => `${e.name}: ${e.message}`).join(' <- '));
      assert.match(rejected.message, /HTTP 400/);
      return true;
    });
    assert.equal(requests().length, 1, 'no retry of a request the provider refused');
    assert.equal(prs().length, 0);
  });

  test("a 429 is retried after the provider's Retry-After, not the backoff", async () => {
    openai.script({ error: { status: 429, message: 'slow down', retryAfter: '7' } });
    const { handle, requests, prs } = await bumpHandle();
    const result = await handle.result();
    assert.equal(result.terminalReason, 'success', result.summary);
    assert.equal(requests().length, 2);
    assert.equal(result.usage!.turns, 2, 'the refused attempt is charged like any');
    assert.equal(prs().length, 1);
    const history = await handle.fetchHistory();
    const timers = (history.events ?? []).flatMap((e) =>
      e.timerStartedEventAttributes ? [Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds ?? 0)] : [],
    );
    assert.ok(timers.includes(7), `a 7 s timer before the retry (timers: ${timers.join(', ')} s)`);
  });
});
