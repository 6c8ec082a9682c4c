import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { awaitRun } from '../../src/run/await-run';
import type { RunResult } from '../../src/core/run-types';
import type { ShadowEffect } from '../../src/core/contracts';
import type { RunDiff, ShadowSummary } from '../../src/shadow/diff';
import { useDevEnv, unique, withWorker } from '../helpers/env';
import { outsideEnv, standinOutside } from '../helpers/outside';
import { runCli } from '../helpers/cli';
import { appOf } from '../helpers/app';
import { startStandins, type Standins } from '../../tools/standins';
import { channelService } from '../../tools/standins/channel';
import { exportService } from '../../tools/standins/exports';
import { changedByCandidate, recordedReporter } from '../fixtures/shadow-candidate';
import { exampleOptions } from '../../examples/app';
import { campaignReporter } from '../../examples/campaign-reporter';

/*
 * `wakegate shadow` on the real dev server: recorded runs of the campaign reporter, then the CLI runs
 * a candidate (test/fixtures/shadow-candidate.ts) on their events in a worker of its own and diffs
 * them. The providers' stand-ins count every request they get, so "no effect was carried out" is
 * read where it would land.
 */
const env = useDevEnv();
let standins: Standins;
/** Requests each effect provider received (any method, any path). */
const calls = { channel: 0, exports: 0 };
/** The wake keys of the recorded runs (the first test records them; the next shadows them again). */
let recordedKeys: string[] = [];
before(async () => {
  await env.ready();
  const channel = channelService();
  const exports = exportService();
  channel.app.addHook('onRequest', async () => void (calls.channel += 1));
  // Requests of every kind: a reconcile export looks (GET) before it starts one (POST).
  exports.app.addHook('onRequest', async () => void (calls.exports += 1));
  standins = await startStandins({}, { channel, exports });
});
after(async () => {
  await standins?.close();
});

/** The deployment the recorded runs ran under: the reporter as recorded beside the other example agents. */
const recorded = appOf(undefined, { agents: [recordedReporter, ...exampleOptions.agents.filter((a) => a !== campaignReporter)] });

describe('wakegate shadow', () => {
  test('20 recorded runs: exactly the wakes whose decide changed are reported, with their argument diffs; no provider is called', async () => {
    const taskQueue = unique('shadow');
    const tag = unique('camp');
    const keys = Array.from({ length: 20 }, (_, i) => `${tag}-${i}`);
    const originals = await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const gate = recorded.gate(env.client, taskQueue);
        const answers = await Promise.all(
          keys.map((k) =>
            gate.admit({ source: 'campaigns', entity: k, type: 'report.due', occurredAt: '2026-12-06T10:00:00Z', payload: { dashboards: ['overview'] } }),
          ),
        );
        return Promise.all(answers.map((a) => awaitRun(env.client, a)));
      },
      { activities: recorded.activities({ outside: standinOutside(standins) }) },
    );
    assert.deepEqual(
      originals.map((r) => r.terminalReason),
      keys.map(() => 'success'),
      originals.map((r) => r.summary).join('; '),
    );
    assert.deepEqual(calls, { channel: 20, exports: 40 }, 'each recorded run posted once, and looked for then started one export');
    recordedKeys = keys;
    const dashboardReads = standins.dashboards.reads();

    const cli = await runCli(
      [
        'shadow',
        'campaign-reporter',
        '--candidate',
        'test/fixtures/shadow-candidate.ts',
        '--since',
        '1h',
        '--json',
        '--fail-if',
        'changedEffects>=50%',
        '--fail-if',
        'newEscalations>0',
      ],
      { TEMPORAL_ADDRESS: env.server.address, ...outsideEnv(standins) },
      240_000,
    );
    assert.equal(cli.code, 6, `exit 6: 10 of 20 wakes changed crosses changedEffects>=50%\n${cli.stderr}`);
    const report = cli.json as { summary: ShadowSummary; wakes: RunDiff[]; failed: unknown[]; failIf: { condition: string; crossed: boolean }[] };
    assert.deepEqual(report.failed, []);
    assert.equal(report.wakes.length, 20);
    assert.deepEqual(report.failIf, [
      { condition: 'changedEffects>=50%', crossed: true },
      { condition: 'newEscalations>0', crossed: false },
    ]);
    const changed = report.wakes.filter((w) => w.effects.length > 0).map((w) => w.wakeKey);
    assert.deepEqual(changed.sort(), keys.filter(changedByCandidate).sort(), 'exactly the wakes whose decide changed');
    assert.equal(report.summary.changedEffects, 10);
    assert.equal(report.summary.changedReason, 0);
    for (const w of report.wakes.filter((x) => x.effects.length)) {
      const original = originals.find((r) => r.runKey === w.runKey)!;
      const text = (original.output as { staged: { effect: string; args: { text: string } }[] }).staged[0]!.args.text;
      assert.deepEqual(w.effects, [
        {
          step: 0,
          effect: 'post_summary',
          change: 'args',
          args: [{ path: 'text', before: text, after: text.replace(`Campaign ${w.wakeKey}:`, `Campaign ${w.wakeKey} (candidate):`) }],
        },
      ]);
      assert.deepEqual(w.terminalReason, { before: 'success', after: 'success', changed: false });
    }

    assert.deepEqual(calls, { channel: 20, exports: 40 }, 'no shadow run called a provider');
    const listed = await env.client.workflow.count('WorkflowType = "runWorkflow" AND WakeAgent = "campaign-reporter"');
    assert.equal(listed.count, 20, 'shadow runs are not indexed as runs of the agent (wakegate runs, the trail)');
    const runs = await runCli(['runs', '--limit', '1000'], { TEMPORAL_ADDRESS: env.server.address });
    const ids = (runs.json.runs as { workflowId: string }[]).map((r) => r.workflowId);
    assert.equal(ids.length, 20, 'wakegate runs lists the recorded runs, not the session’s shadows');
    assert.equal(standins.dashboards.reads() - dashboardReads, 20, 'tools run live: one dashboard read per shadow run');
    // What a shadow run recorded instead: both effects, under its own effect keys, and what a real run would do.
    const one = report.wakes[1]!;
    const shadowResult = (await env.client.workflow.getHandle(one.shadowRunKey).result()) as RunResult;
    // Bounded by Temporal: a shadow run whose CLI process died is closed, not left open on a queue no one polls.
    const desc = await env.client.workflow.getHandle(one.shadowRunKey).describe();
    assert.equal(Number(desc.raw.executionConfig?.workflowExecutionTimeout?.seconds), 86_400);
    const out = shadowResult.output as { committed: unknown[]; shadow: ShadowEffect[] };
    assert.deepEqual(out.committed, []);
    assert.deepEqual(
      out.shadow.map((e) => [e.name, e.class, e.effectKey.startsWith(`${one.shadowRunKey}#`), e.wouldAwaitApproval]),
      [
        ['post_summary', 'provider_key', true, false],
        ['start_export', 'reconcile', true, false],
      ],
    );
    assert.match(out.shadow[0]!.wouldDo, /idempotency key shadow\//);
  });

  test('--tools recorded: every tool call the recorded runs made is answered from their histories, none reaches the tool', async () => {
    assert.ok(recordedKeys.length, 'the recorded runs of the test before');
    const reads = standins.dashboards.reads();
    const cli = await runCli(
      ['shadow', 'campaign-reporter', '--candidate', 'test/fixtures/shadow-candidate.ts', '--since', '1h', '--tools', 'recorded', '--json'],
      { TEMPORAL_ADDRESS: env.server.address, ...outsideEnv(standins) },
      240_000,
    );
    assert.equal(cli.code, 0, cli.stderr);
    const report = cli.json as { summary: ShadowSummary; wakes: RunDiff[]; failed: unknown[] };
    assert.deepEqual(report.failed, []);
    assert.equal(standins.dashboards.reads() - reads, 0, 'no dashboard read: each subagent was answered from its recorded read');
    // One subagent (dashboard "overview") per recorded run, each with one read.
    assert.deepEqual(report.summary.toolCalls, { recorded: 20, live: 0 });
    assert.ok(report.wakes.every((w) => w.toolCalls?.recorded === 1 && w.toolCalls.live === 0));
    // Answered from the record, the shadow sees what the recorded run saw: the same subset changes.
    const changed = report.wakes.filter((w) => w.effects.length > 0).map((w) => w.wakeKey);
    assert.deepEqual(changed.sort(), recordedKeys.filter(changedByCandidate).sort());
    assert.deepEqual(calls, { channel: 20, exports: 40 }, 'no shadow run called a provider');
  });

  test('bad flags exit 2 before any connection; a window with no recorded run exits 3', async () => {
    const nowhere = { TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const bad = await runCli(['shadow', 'campaign-reporter', '--candidate', 'test/fixtures/shadow-candidate.ts', '--fail-if', 'costDelta>5%'], nowhere);
    assert.equal(bad.code, 2);
    assert.match(String((bad.json.error as { message: string }).message), /only a count of wakes takes %/);
    const tools = await runCli(['shadow', 'campaign-reporter', '--candidate', 'test/fixtures/shadow-candidate.ts', '--tools', 'cached'], nowhere);
    assert.equal(tools.code, 2);
    assert.match(String((tools.json.error as { message: string }).message), /--tools must be live or recorded/);
    const unknown = await runCli(['shadow', 'nobody', '--candidate', 'test/fixtures/shadow-candidate.ts'], nowhere);
    assert.equal(unknown.code, 2);
    assert.match(String((unknown.json.error as { message: string }).message), /defines no agent "nobody"/);
    const none = await runCli(['shadow', 'dependency-bump', '--candidate', 'test/fixtures/shadow-candidate.ts', '--json'], {
      TEMPORAL_ADDRESS: env.server.address,
    });
    assert.equal(none.code, 3, none.stderr);
    assert.match(String((none.json.error as { message: string }).message), /no completed run of dependency-bump/);
  });
});
