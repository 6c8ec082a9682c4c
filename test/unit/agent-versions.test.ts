import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defineAgent, defineTool } from '../../src/agents/definition';
import { agentNamed, agentVersions, versionOf } from '../../src/agents/registry';
import { DEFAULT_VERSION, versionOfView, type RolloutState, type RolloutView } from '../../src/core/rollout';
import { versionOf as machineVersionOf } from '../../workflows/rollout/machine';

/** A tool-only agent whose one step says which version ran it. */
function agent(version?: string, versions?: ReturnType<typeof defineAgent>[]) {
  return defineAgent({
    name: 'reporter',
    ...(version ? { version } : {}),
    ...(versions ? { versions } : {}),
    description: 'says which version ran it',
    triggers: ['ping'],
    wakeKey: (e) => e.entity,
    wakeKeyRationale: 'One wake per entity: each event is its own report.',
    budget: { turns: 1, tokens: 1, toolCalls: 1, wallClock: '1m', costUsd: 0.01 },
    tools: [defineTool({ name: 'say', description: 'say the version', timeout: '5s', run: async () => ({ content: version ?? 'v1', changed: false }) })],
    steps: ['say'],
  });
}

test('an agent that names no version is v1, and lists no others', () => {
  const def = agent();
  assert.equal(def.policy.version, DEFAULT_VERSION);
  assert.deepEqual(agentVersions(def), { current: 'v1', others: [] });
  assert.equal(versionOf(def, undefined), def);
  assert.equal(versionOf(def, 'v1'), def);
  assert.equal(versionOf(def, 'v2'), undefined);
});

test('an agent lists its other versions, and the registry resolves each by name', () => {
  const v2 = agent('v2');
  const def = agent('v1', [v2]);
  assert.deepEqual(agentVersions(def), { current: 'v1', others: ['v2'] });
  const agents = { reporter: def };
  assert.equal(agentNamed(agents, 'reporter'), def);
  assert.equal(agentNamed(agents, 'reporter', 'v1'), def);
  assert.equal(agentNamed(agents, 'reporter', 'v2'), v2);
  assert.throws(() => agentNamed(agents, 'reporter', 'v3'), /no version "v3" in this worker \(it has v1, v2\)/);
  assert.throws(() => agentNamed(agents, 'nobody'), /no agent named "nobody"/);
});

test('versions must be of the same agent, each with its own name, listed once, with none of their own', () => {
  const other = defineAgent({ ...optionsOf('other'), version: 'v2' });
  assert.throws(() => agent('v1', [other]), /a version of "reporter" has the same name/);
  assert.throws(() => agent('v1', [agent('v1')]), /it is version "v1" too/);
  assert.throws(() => agent('v1', [agent('v2'), agent('v2')]), /version "v2" is listed twice/);
  assert.throws(() => agent('v1', [agent('v2', [agent('v3')])]), /lists versions of its own/);
  assert.throws(() => agent('v 2'), /a version is letters, digits/);
});

function optionsOf(name: string) {
  return {
    name,
    description: 'another agent',
    triggers: ['ping'] as [string],
    wakeKey: (e: { entity: string }) => e.entity,
    wakeKeyRationale: 'One wake per entity: each event is its own report.',
    budget: { turns: 1, tokens: 1, toolCalls: 1, wallClock: '1m', costUsd: 0.01 },
    tools: [defineTool({ name: 'say', description: 'say', timeout: '5s', run: async () => ({ content: '', changed: false }) })],
    steps: ['say'],
  };
}

test('the view every worker reads gives each wake the version the rollout machine gives it', () => {
  const phases = ['idle', 'ramping', 'promoted', 'rolled_back'] as const;
  fc.assert(
    fc.property(fc.constantFrom(...phases), fc.double({ min: 0, max: 1, noNaN: true }), fc.string({ minLength: 1, maxLength: 40 }), (phase, share, wakeKey) => {
      const view: RolloutView = { phase, current: 'v1', candidate: 'v2', share, rollout: 1 };
      const m = { agent: 'reporter', phase, current: 'v1', candidate: 'v2', share } as RolloutState;
      const expected = machineVersionOf(m, wakeKey) === 'candidate' ? 'v2' : 'v1';
      assert.equal(versionOfView(view, 'reporter', wakeKey), expected);
    }),
  );
});
