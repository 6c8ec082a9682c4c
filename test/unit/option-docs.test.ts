import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { aiSdkModel, defineAgent, defineEffect, offlineModel } from '../../src';
import { DEFAULT_EFFECT_TIMEOUT_MS } from '../../src/core/policy';

const ROOT = path.resolve(__dirname, '..', '..');

/** The members of interface `name` in `file` without a TSDoc comment, and the type of `fn`'s first parameter as written. */
function undocumented(file: string, name: string, fn: string): { missing: string[]; members: number; param?: string } {
  const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  let missing: string[] = [];
  let members = 0;
  let param: string | undefined;
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      members = node.members.length;
      missing = node.members.filter((m) => ts.getJSDocCommentsAndTags(m).length === 0).map((m) => m.name?.getText(source) ?? '?');
    }
    if (ts.isFunctionDeclaration(node) && node.name?.text === fn) param = node.parameters[0]?.type?.getText(source);
  });
  return { missing, members, ...(param ? { param } : {}) };
}

test('every option of a trigger and of an effect carries TSDoc, on the type defineTrigger and defineEffect take', () => {
  const trigger = undocumented('src/trigger/definition.ts', 'TriggerOptions', 'defineTrigger');
  assert.ok(trigger.members >= 9, 'TriggerOptions lists the options');
  assert.deepEqual(trigger.missing, []);
  assert.equal(trigger.param, 'TriggerOptions', 'users see the documented interface, not the schema inferred type (whose .d.ts drops every comment)');
  const effect = undocumented('src/agents/effect.ts', 'EffectOptions', 'defineEffect');
  assert.ok(effect.members >= 9);
  assert.deepEqual(effect.missing, []);
  assert.equal(effect.param, 'EffectOptions<S>');
});

const effectWith = (timeout?: string) =>
  defineEffect({
    name: 'post_note',
    description: 'Post a note',
    class: 'idempotent',
    reversible: true,
    ...(timeout ? { timeout } : {}),
    apply: async () => ({ ref: 'n' }),
  });

test("an effect's timeout: 30 s by default, a duration string otherwise, carried into the policy the commit activity is scheduled with", () => {
  assert.equal(DEFAULT_EFFECT_TIMEOUT_MS, 30_000);
  assert.equal(effectWith().timeoutMs, 30_000);
  assert.equal(effectWith('2 minutes').timeoutMs, 120_000);
  assert.throws(() => effectWith('soon'), /invalid effect definition "post_note": timeout: effect.timeout "soon" is not a duration/);
  assert.throws(() => effectWith('10ms'), /effect.timeout/);
  const agent = defineAgent({
    name: 'noter',
    description: 'Posts notes',
    triggers: ['ping'],
    wakeKey: (e) => e.entity,
    wakeKeyRationale: 'One wake per entity, for this test.',
    systemPrompt: 'Write one note.',
    model: { use: aiSdkModel(offlineModel()), maxOutputTokens: 300, inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
    budget: { turns: 2, tokens: 1000, toolCalls: 2, wallClock: '1m', costUsd: 0.01 },
    effects: [effectWith('45s')],
    answer: z.object({ note: z.string() }),
    decide: (a) => ({ effects: [{ effect: 'post_note', args: {} }], summary: a.note }),
  });
  assert.equal(agent.policy.effects.find((e) => e.name === 'post_note')?.timeoutMs, 45_000);
});
