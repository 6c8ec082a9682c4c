import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { defineAgent, defineEffect } from '../../src/agents/definition';
import { inShadowSample, shadowAgentName, shadowedAgent, shadowInput } from '../../src/core/shadow';
import { capsFor, SHADOW_SCOPE } from '../../src/core/caps';
import { withShadows } from '../../src/agents/registry';
import { defaultSupervisorPolicy } from '../../src/supervisor/policy';
import { keyEvent } from '../../src/gate/key-event';
import { registryOf } from '../helpers/app';

const post = defineEffect({
  name: 'post',
  description: 'Post it.',
  class: 'idempotent',
  reversible: true,
  input: z.object({ text: z.string() }),
  apply: async () => ({ ref: 'r' }),
});
const agent = (name: string, prompt: string, more: object = {}) =>
  defineAgent({
    name,
    description: 'd',
    triggers: ['campaigns'],
    wakeKey: (e) => e.entity,
    wakeKeyRationale: 'one wake per campaign, whatever happened to it',
    systemPrompt: prompt,
    model: { maxOutputTokens: 100, inputUsdPerMTok: 1, outputUsdPerMTok: 1 },
    budget: { turns: 2, tokens: 1000, toolCalls: 2, wallClock: '1m', costUsd: 0.1 },
    effects: [post],
    ...more,
  });

test('defineAgent takes a shadow candidate of the same agent and a sample from 0 to 1; its policy carries the sample only', () => {
  const v2 = agent('reporter', 'v2');
  const v1 = agent('reporter', 'v1', { shadow: { candidate: v2, sample: 0.2 } });
  assert.deepEqual(v1.policy.shadow, { sample: 0.2 });
  assert.equal(v1.shadow?.candidate, v2);
  assert.throws(() => agent('reporter', 'v1', { shadow: { candidate: agent('other', 'x'), sample: 0.2 } }), /must be a version of "reporter"/);
  assert.throws(() => agent('reporter', 'v1', { shadow: { candidate: v2, sample: 1.5 } }), /shadow.sample is a share of runs/);
  assert.throws(() => agent('reporter', 'v1', { shadow: { candidate: { name: 'reporter' }, sample: 1 } }), /shadow.candidate must be an agent definition/);
  assert.equal(agent('reporter', 'v1').policy.shadow, undefined, 'off: no line, no shadow');
});

test('a worker resolves the shadow name to the candidate, under that name, with no shadow of its own; other names stay unknown', () => {
  const v2 = agent('reporter', 'v2');
  const v1 = agent('reporter', 'v1', { shadow: { candidate: v2, sample: 1 } });
  const agents = withShadows({ reporter: v1 });
  const shadow = agents[shadowAgentName('reporter')]!;
  assert.equal(shadow.policy.name, 'reporter/shadow');
  assert.equal(shadow.policy.systemPrompt, 'v2');
  assert.equal(shadow.policy.shadow, undefined);
  assert.equal(shadow.decide, v2.decide);
  assert.equal(agents.reporter, v1, 'the agent itself as it was');
  assert.equal(shadowedAgent('reporter/shadow'), 'reporter');
  assert.equal(shadowedAgent('reporter'), undefined);
  assert.equal(withShadows({ reporter: agent('reporter', 'v1') })['reporter/shadow'], undefined, 'no shadow, no shadow name');
});

test('the sample is a stable hash of the run key: the same run always, about the share asked, 0 never and 1 always', () => {
  const keys = Array.from({ length: 4000 }, (_, i) => `reporter@campaigns/report.due/c-${i}/2026-12-06T10:00:00Z`);
  const share = keys.filter((k) => inShadowSample(k, 0.2)).length / keys.length;
  assert.ok(share > 0.17 && share < 0.23, `share ${share}`);
  assert.deepEqual(
    keys.slice(0, 50).map((k) => inShadowSample(k, 0.2)),
    keys.slice(0, 50).map((k) => inShadowSample(k, 0.2)),
  );
  assert.ok(keys.every((k) => inShadowSample(k, 1) && !inShadowSample(k, 0)));
});

test("a live shadow's input: its own ID, the shadow agent name, origin live; its caps are the shadow caps alone", () => {
  const input = keyEvent(registryOf(), { source: 'campaigns', entity: 'c-1', type: 'report.due', occurredAt: '2026-12-06T10:00:00Z' }).input;
  const live = shadowInput('live', { workflowId: input.runKey, runId: 'r1', input }, true);
  assert.equal(live.runKey, `shadow/live/${input.runKey}`);
  assert.equal(live.agent, `${input.agent}/shadow`);
  assert.deepEqual(live.origin, { kind: 'shadow', of: input.runKey, ofRunId: 'r1', absorbed: [], live: true });
  const session = shadowInput('s1', { workflowId: input.runKey, runId: 'r1', input });
  assert.equal(session.agent, input.agent);
  assert.deepEqual(
    capsFor(defaultSupervisorPolicy, live.agent).map((c) => c.scope),
    [SHADOW_SCOPE],
  );
  assert.ok(capsFor(defaultSupervisorPolicy, input.agent).every((c) => c.scope !== SHADOW_SCOPE));
});
