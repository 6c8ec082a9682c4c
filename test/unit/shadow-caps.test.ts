import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWakegate } from '../../src/runtime/wakegate';
import { exampleOptions } from '../../examples/app';
import { defaultSupervisorPolicy, withSupervisorPolicy } from '../../src/supervisor/policy';
import { stopReaches } from '../../src/core/shadow';
import { loadConfig } from '../../src/config/config';
import type { WindowCap } from '../../src/core/supervisor-types';

/*
 * Live shadows are never uncapped, and the kill switch that stops an agent's runs stops its live
 * shadows too (pure parts; the dev-server side is test/dev-server/live-shadow-stop.test.ts).
 */

const config = loadConfig({});
const withShadowCaps = (shadow: WindowCap[] | undefined) =>
  withSupervisorPolicy({ caps: { ...defaultSupervisorPolicy.caps, shadow } as typeof defaultSupervisorPolicy.caps });

test('caps.shadow: [] is refused at definition, naming the field and the two ways out', () => {
  assert.throws(
    () => createWakegate({ ...exampleOptions, config, supervisor: withShadowCaps([]) }),
    (err: Error) =>
      /supervisor\.caps\.shadow/.test(err.message) &&
      /no cap at all/.test(err.message) &&
      /leave caps\.shadow out/.test(err.message) &&
      /remove the agents' `shadow` option/.test(err.message),
  );
  const app = createWakegate({ ...exampleOptions, config });
  assert.throws(() => app.activities({ supervisor: withShadowCaps([]) }), /supervisor\.caps\.shadow/, 'an override of the policy too');
});

test('a shadow cap that limits nothing is refused too; absent (the default caps) or any limit is taken', () => {
  assert.throws(
    () => createWakegate({ ...exampleOptions, config, supervisor: withShadowCaps([{ windowMs: 60_000, rationale: 'nothing' }]) }),
    /supervisor\.caps\.shadow\[0\] limits nothing: give it wakes, costUsd or tokens/,
  );
  for (const shadow of [undefined, [{ windowMs: 60_000, wakes: 0, rationale: 'no live shadow runs' }], [{ windowMs: 60_000, costUsd: 1, rationale: 'r' }]])
    assert.doesNotThrow(() => createWakegate({ ...exampleOptions, config, supervisor: withShadowCaps(shadow) }), JSON.stringify(shadow));
});

test("a stop of agent X reaches X's runs and X's live shadows, no other agent's; a stop of every agent reaches every run", () => {
  assert.equal(stopReaches(['deps'], 'deps'), true);
  assert.equal(stopReaches(['deps'], 'deps/shadow'), true);
  assert.equal(stopReaches(['deps'], 'reporter/shadow'), false);
  assert.equal(stopReaches(['deps'], 'reporter'), false);
  assert.equal(stopReaches(['deps'], ''), false);
  for (const agent of ['deps', 'deps/shadow', 'reporter/shadow', '']) assert.equal(stopReaches(undefined, agent), true, agent);
});
