import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunResult } from '../../src/core/run-types';
import type { LiveShadowReport } from '../../src/shadow/report';
import { useDevEnv, unique, withWorker } from '../helpers/env';
import { outsideEnv, standinOutside } from '../helpers/outside';
import { runCli } from '../helpers/cli';
import { loadConfig } from '../../src/config/config';
import { startIngress } from '../../src/processes/ingress-listeners';
import { appOf } from '../helpers/app';
import { startStandins, type Standins } from '../../tools/standins';
import { channelService } from '../../tools/standins/channel';
import { exportService } from '../../tools/standins/exports';
import { changedByCandidate } from '../fixtures/shadow-candidate';
import { liveShadowAgents, liveShadowSupervisor, SHADOW_RUNS_PER_HOUR } from '../fixtures/live-shadow-app';

/*
 * Live shadow on the real dev server: the campaign reporter with `shadow: { candidate, sample: 1 }`
 * (test/fixtures/live-shadow-app.ts) takes a burst of wakes. Every real run starts one shadow of the
 * candidate as it ends; the supervisor's shadow caps let six run and refuse the rest, while every
 * production wake runs and commits; `wakegate shadow report` diffs what ran.
 */
const env = useDevEnv();
let standins: Standins;
const calls = { channel: 0, exports: 0 };
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

const app = appOf(undefined, { agents: liveShadowAgents, supervisor: liveShadowSupervisor });
const WAKES = 10;

test('sample 1 on a burst: one shadow per real run, the shadow cap refusing past its limit, production unaffected, the diffs reported', async () => {
  const taskQueue = unique('live-shadow');
  const tag = unique('camp');
  const keys = Array.from({ length: WAKES }, (_, i) => `${tag}-${i}`);
  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const gate = app.gate(env.client, taskQueue);
      const answers = await Promise.all(
        keys.map((k) =>
          gate.admit({ source: 'campaigns', entity: k, type: 'report.due', occurredAt: '2026-12-06T10:00:00Z', payload: { dashboards: ['overview'] } }),
        ),
      );
      const real = await Promise.all(answers.map(async (a) => (await env.client.workflow.getHandle(a.runKey).result()) as RunResult));
      assert.deepEqual(
        real.map((r) => r.terminalReason),
        keys.map(() => 'success'),
        'every production wake ran and committed, whatever the shadow caps said',
      );
      // One shadow per real run, started as it ended: `shadow/live/<run key>`.
      const shadows = await Promise.all(answers.map(async (a) => (await env.client.workflow.getHandle(`shadow/live/${a.runKey}`).result()) as RunResult));
      const ran = shadows.filter((s) => s.terminalReason === 'success');
      const refused = shadows.filter((s) => s.terminalReason === 'discarded');
      assert.equal(ran.length + refused.length, WAKES, shadows.map((s) => `${s.terminalReason}: ${s.summary}`).join('; '));
      assert.ok(ran.length >= 1 && ran.length <= SHADOW_RUNS_PER_HOUR, `at most the cap ran: ${ran.length}`);
      assert.ok(refused.length >= WAKES - SHADOW_RUNS_PER_HOUR);
      for (const s of refused) {
        assert.match(s.summary, /a live shadow not run: .*over a rolling cap/);
        assert.equal(s.usage?.tokens ?? 0, 0, 'refused before any token');
      }
      assert.deepEqual(calls, { channel: WAKES, exports: 2 * WAKES }, 'only production runs reached a provider (a look and a start per export)');

      const cli = await runCli(['shadow', 'report', 'campaign-reporter', '--since', '1h', '--json'], {
        TEMPORAL_ADDRESS: env.server.address,
        WAKEGATE_APP: 'test/fixtures/live-shadow-app.ts',
        WAKEGATE_TASK_QUEUE: taskQueue,
        ...outsideEnv(standins),
      });
      assert.equal(cli.code, 0, cli.stderr);
      const report = cli.json as unknown as LiveShadowReport & { sample: number };
      assert.equal(report.sample, 1);
      assert.deepEqual(report.failed, []);
      assert.equal(report.wakes.length, ran.length);
      assert.equal(report.refused.length, refused.length);
      for (const w of report.wakes) {
        assert.equal(w.effects.length > 0, changedByCandidate(w.wakeKey), `${w.wakeKey}: changed exactly when the candidate's decide differs`);
        assert.equal(w.shadowRunKey, `shadow/live/${w.runKey}`);
      }
      assert.equal(report.summary.changedEffects, report.wakes.filter((w) => changedByCandidate(w.wakeKey)).length);

      // The operator's listener: the page with its chart, and the counts apart in /metrics.
      const config = { ...loadConfig({}).ingress, port: 0, host: '127.0.0.1', operatorPort: 0 };
      const ingress = await startIngress({ client: env.client, taskQueue, registry: app.registry, sources: app.webhookSources, config, allowDevSecrets: true });
      try {
        const html = await (await fetch(`${ingress.operatorUrl}/shadow/campaign-reporter?since=1h`)).text();
        const drawn = Object.fromEntries([...html.matchAll(/data-outcome="(\w+)" data-count="(\d+)"/g)].map((m) => [m[1], Number(m[2])]));
        const changed = report.wakes.filter((w) => changedByCandidate(w.wakeKey)).length;
        assert.deepEqual(drawn, {
          ...(ran.length - changed ? { unchanged: ran.length - changed } : {}),
          ...(changed ? { changedEffects: changed } : {}),
          refused: refused.length,
        });
        assert.equal((await fetch(`${ingress.operatorUrl}/shadow/nobody`)).status, 404);
        assert.equal((await fetch(`${ingress.operatorUrl}/shadow/campaign-reporter?since=soon`)).status, 400);
        // The counts are read in the background from the listener's start: a scrape never waits for them, it says when they are stale.
        let metrics = '';
        for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
          metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
          if (/wakegate_shadow_runs_stale\{agent="campaign-reporter"\} 0\b/.test(metrics)) break;
        }
        assert.match(metrics, /wakegate_shadow_runs_stale\{agent="campaign-reporter"\} 0\b/);
        assert.match(metrics, new RegExp(`wakegate_shadow_runs\\{agent="campaign-reporter",outcome="ran"\\} ${ran.length}\\b`));
        assert.match(metrics, new RegExp(`wakegate_shadow_runs\\{agent="campaign-reporter",outcome="refused"\\} ${refused.length}\\b`));
      } finally {
        await ingress.close();
      }

      // Shadows are indexed as `<agent>/shadow`: no query of the agent's runs counts them.
      const agentRuns = await env.client.workflow.count(`WorkflowType = "runWorkflow" AND WakeAgent = "campaign-reporter"`);
      assert.equal(agentRuns.count, WAKES);
    },
    { activities: app.activities({ outside: standinOutside(standins), supervisor: liveShadowSupervisor }) },
  );
});
