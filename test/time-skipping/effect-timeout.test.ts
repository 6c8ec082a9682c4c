import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { RunResult } from '../../src/core/run-types';
import { DEFAULT_EFFECT_TIMEOUT_MS } from '../../src/core/policy';
import { withPolicies } from '../helpers/agents';
import type { Standins } from '../../tools/standins';
import { assertClockFree, startTimeSkippingEnv, unique, withTimeSkippingWorker } from '../helpers/env';
import { standinOutside, startOutside, startWake, wakeInput } from '../helpers/outside';
import { activitiesOf, exampleAgents } from '../helpers/app';

/*
 * An effect's `timeout` reaches its commit activity: the run schedules `commitEffect` with the
 * effect's start-to-close, read from the policy the run prepared (no config in the workflow).
 */

let env: TestWorkflowEnvironment;
let standins: Standins;
before(async () => {
  env = await startTimeSkippingEnv();
  standins = (await startOutside()).standins;
});
afterEach(() => assertClockFree(env));
after(async () => {
  await standins?.close();
  await env?.teardown();
});

/** The start-to-close timeouts (ms) of the `commitEffect` activities a run scheduled, from its history. */
async function commitTimeouts(workflowId: string): Promise<number[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === 'commitEffect')
    .map((a) => Number(a!.startToCloseTimeout?.seconds ?? 0) * 1000 + Math.round((a!.startToCloseTimeout?.nanos ?? 0) / 1e6));
}

/** One dependency bump (its effect opens a pull request) on a worker whose dependency-bump agent's effects take `timeoutMs`. */
async function bump(timeoutMs: number | undefined): Promise<{ result: RunResult; timeouts: number[] }> {
  const repo = unique('acme/t');
  const input = wakeInput('deps', `${repo}:lodash`, 'release.published', { repo, package: 'lodash', from: '4.17.20', to: '4.17.21' });
  const agents = withPolicies(exampleAgents, (d) =>
    d.policy.name === input.agent ? { effects: d.policy.effects.map((e) => ({ ...e, timeoutMs })) } : undefined,
  );
  const queue = unique('effect-timeout');
  const activities = activitiesOf({ agents, outside: standinOutside(standins) });
  const result = await withTimeSkippingWorker(env, queue, async () => (await startWake(env.client, queue, input)).result() as Promise<RunResult>, {
    activities,
  });
  return { result, timeouts: await commitTimeouts(input.runKey) };
}

test("an effect's timeout is its commit activity's start-to-close; a policy without one (a run prepared before effects had it) gets 30 s", async () => {
  const own = await bump(45_000);
  assert.equal(own.result.terminalReason, 'success', own.result.summary);
  assert.deepEqual(own.timeouts, [45_000]);
  const older = await bump(undefined);
  assert.equal(older.result.terminalReason, 'success', older.result.summary);
  assert.deepEqual(older.timeouts, [DEFAULT_EFFECT_TIMEOUT_MS]);
});
